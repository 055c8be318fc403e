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

// A re-run says which job it ran again; a job submitted afresh says nothing of it.
func TestPrintJobSaysWhatAReRunRan(t *testing.T) {
	old := int64(12)
	for _, tc := range []struct {
		rerunOf *int64
		want    bool
	}{{&old, true}, {nil, false}} {
		var out strings.Builder
		if err := printJob(&out, cliJob{ID: 13, Name: "n", State: "queued", RerunOf: tc.rerunOf}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), "Re-run of:"); got != tc.want || tc.want && !strings.Contains(out.String(), "Re-run of:        job 12\n") {
			t.Errorf("re-run of %v: got\n%s", tc.rerunOf, out.String())
		}
	}
}

// The command is written as a shell would read it back: an argument with spaces or
// quotes is quoted, so the line can be copied into a shell or the submit form.
func TestPrintJobQuotesItsCommand(t *testing.T) {
	var out strings.Builder
	if err := printJob(&out, cliJob{ID: 1, Name: "n", State: "queued", Command: []string{"sh", "-c", "echo it's $HOME"}}); err != nil {
		t.Fatal(err)
	}
	if want := `Command:          sh -c 'echo it'\''s $HOME'` + "\n"; !strings.Contains(out.String(), want) {
		t.Errorf("got\n%s\nwant a line %q", out.String(), want)
	}
}

// Each event says why it happened in the server's words, on one line of the terminal:
// a failed job's last event says how its attempt ended.
func TestPrintJobSaysWhatEachEventWas(t *testing.T) {
	j := cliJob{ID: 2, Name: "n", State: "failed", Events: []cliEvent{
		{To: "queued", Reason: "submitted"},
		{From: "running", To: "failed", Reason: "failed", Message: "attempt 1 exited with code 127 (cannot start\nthe command)"},
	}}
	var out strings.Builder
	if err := printJob(&out, j); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"running → failed  failed: attempt 1 exited with code 127 (cannot start the command)\n", "· → queued        submitted\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("got\n%s\nwant a line ending %q", out.String(), want)
		}
	}
}

// The image is named as the job's page names it: the catalog entry, with the reference
// it runs where it has one.
func TestPrintJobNamesItsImage(t *testing.T) {
	for _, tc := range []struct {
		job  cliJob
		want string
	}{
		{cliJob{ImageName: "plain-command"}, "plain-command"},
		{cliJob{ImageName: "pytorch-2.4", Image: "nvcr.io/nvidia/pytorch:24.05-py3"}, "pytorch-2.4 (nvcr.io/nvidia/pytorch:24.05-py3)"},
		{cliJob{Image: "ghcr.io/ada/mine:1"}, "ghcr.io/ada/mine:1"},
		{cliJob{}, "-"},
	} {
		var out strings.Builder
		if err := printJob(&out, tc.job); err != nil {
			t.Fatal(err)
		}
		if want := "Image:            " + tc.want + "\n"; !strings.Contains(out.String(), want) {
			t.Errorf("got\n%s\nwant a line %q", out.String(), want)
		}
	}
}

// A job that requires NVLink says so beside its GPUs.
func TestPrintJobSaysItsGPUsAreJoinedByNVLink(t *testing.T) {
	j := cliJob{}
	j.Resources.GPUs, j.Resources.GPUModel, j.Resources.NVLink = 8, "H100", true
	var out strings.Builder
	if err := printJob(&out, j); err != nil {
		t.Fatal(err)
	}
	if want := "GPUs:             8×H100 NVLink\n"; !strings.Contains(out.String(), want) {
		t.Errorf("got\n%s\nwant a line %q", out.String(), want)
	}
}
