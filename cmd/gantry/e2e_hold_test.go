package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A running job held from the CLI is asked to checkpoint (SIGUSR1), saves its step and
// exits, and stays held, in the name of who held it, rather than going back to the
// queue; released, its next attempt resumes from the checkpoint. Holding it again
// while held, or releasing a job that is not held, is refused in one line.
func TestCLIHoldOfARunningJobCheckpointsAndReleaseResumes(t *testing.T) {
	dir := t.TempDir()
	url, _ := serveFor(t, dir, "--heartbeat-interval", "300ms")
	u := newCLIUser(t)
	u.ok("login", "--server", url, "--token", apiToken(t, dir))

	j := u.jobJSON("job", "submit", "--project", "default", "--name", "holdme", "--gpus", "0", "--", "/bin/sh", "-c",
		`ck="$GANTRY_CHECKPOINT_DIR/step"; [ -f "$ck" ] && { echo "resumed at $(cat "$ck")"; exit 0; }
i=0; trap 'echo "$i" > "$ck"; echo "checkpointed at $i"; exit 0' USR1
echo started; while :; do i=$((i+1)); sleep 0.05; done`)
	id := strconv.FormatInt(j.ID, 10)
	waitCLI(t, "the job to start", func() bool { return strings.Contains(u.ok("job", "logs", id), "started") })
	if _, stderr, code := u.run("", "job", "release", id); code != 1 || !strings.Contains(stderr, "only a held job can be released") {
		t.Fatalf("release of a running job: exit %d %q", code, stderr)
	}
	if out := u.ok("job", "hold", id); !strings.Contains(out, "holdme") {
		t.Fatalf("hold: %q", out)
	}
	var held cliJob
	waitCLI(t, "the job to be held", func() bool { held = u.jobJSON("job", "get", id); return held.State == "held" })
	first := u.ok("job", "logs", id, "--attempt", "1")
	step := regexp.MustCompile(`checkpointed at (\d+)\n`).FindStringSubmatch(first)
	if step == nil || step[1] == "0" {
		t.Fatalf("attempt 1 did not checkpoint on the hold: %q", first)
	}
	var detail struct {
		Events []struct{ To, Reason, Message, Actor string } `json:"events"`
	}
	if err := json.Unmarshal([]byte(u.ok("job", "get", id, "-o", "json")), &detail); err != nil {
		t.Fatal(err)
	}
	var timeline []string
	for _, e := range detail.Events {
		timeline = append(timeline, e.To)
		if (e.To == "preempting" || e.To == "held") && !strings.HasPrefix(e.Message, "held by user:admin") {
			t.Errorf("event to %s says %q, want it held by user:admin", e.To, e.Message)
		}
	}
	if got := strings.Join(timeline, " "); got != "queued scheduled running preempting held" {
		t.Fatalf("timeline = %s, want the job held after it stopped, never queued again", got)
	}
	if _, stderr, code := u.run("", "job", "hold", id); code != 1 || !strings.Contains(stderr, "is held; only a queued, scheduled or running job can be held") {
		t.Fatalf("hold of a held job: exit %d %q", code, stderr)
	}

	if out := u.ok("job", "release", id); !strings.Contains(out, "is queued") {
		t.Fatalf("release: %q", out)
	}
	if logs := u.ok("job", "logs", "-f", id, "--attempt", "2"); logs != "resumed at "+step[1]+"\n" {
		t.Fatalf("attempt 2 printed %q; attempt 1 printed %q", logs, first)
	}
	if done := u.jobJSON("job", "get", id); done.State != "succeeded" || done.Attempt != 2 {
		t.Fatalf("after release: %s, attempt %d", done.State, done.Attempt)
	}
}

// waitCLI polls cond until it holds, for up to 30 seconds.
func waitCLI(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
