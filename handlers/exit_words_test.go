package handlers

import "testing"

func TestExitWordsNameTheSignalOfAKilledJob(t *testing.T) {
	for _, tc := range []struct {
		code    int
		stopped bool
		want    string
	}{
		{0, false, "exit 0"},
		{1, true, "exit 1"},
		{128, false, "exit 128"},
		{-1, true, "stopped by a signal, as asked"},
		{-1, false, "killed, without an exit code"},
		{143, true, "exit 143: stopped by SIGTERM, as asked"},
		{137, true, "exit 137: stopped by SIGKILL, as asked"},
		{137, false, "exit 137: killed by SIGKILL (out of memory, often)"},
		{139, false, "exit 139: killed by SIGSEGV"},
		{134, false, "exit 134: killed by SIGABRT"},
		{133, false, "exit 133"}, // 128+5 (SIGTRAP) is no way a job is usually ended: a code it chose
		{255, false, "exit 255"},
	} {
		if got := exitWords("exit", tc.code, tc.stopped); got != tc.want {
			t.Errorf("exitWords(%d, stopped %v) = %q, want %q", tc.code, tc.stopped, got, tc.want)
		}
	}
}
