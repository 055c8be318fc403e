package main

import (
	"strings"
	"testing"
)

// gantry job get says which signal an exit code of 128+n stands for, and leaves any
// other code as it is.
func TestPrintJobNamesTheSignalOfItsExitCode(t *testing.T) {
	for code, want := range map[int]string{143: "Exit code:        143 (SIGTERM)\n", 137: "Exit code:        137 (SIGKILL)\n", 7: "Exit code:        7\n"} {
		var out strings.Builder
		if err := printJob(&out, cliJob{ID: 1, Name: "n", State: "failed", ExitCode: &code}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("exit %d: got\n%s\nwant a line %q", code, out.String(), want)
		}
	}
}
