package agentapi

import "testing"

func TestExitSignalNamesTheSignalOf128PlusN(t *testing.T) {
	for code, want := range map[int]string{143: "SIGTERM", 137: "SIGKILL", 139: "SIGSEGV", 130: "SIGINT",
		0: "", 1: "", 15: "", 128: "", 133: "", 255: "", -1: ""} {
		if got := ExitSignal(code); got != want {
			t.Errorf("ExitSignal(%d) = %q, want %q", code, got, want)
		}
	}
}
