package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/jobs"
)

// A production job preempts a preemptible test job on the only GPU: the victim is
// asked to checkpoint (SIGUSR1 and the request file), saves its step and exits,
// goes back to the queue, and its next attempt resumes from the checkpoint.
func TestE2EPreemptionResumesFromCheckpoint(t *testing.T) {
	c := newCluster(t)
	c.startAgent("gpu-1", "1xL4-24GB")
	yes := true
	victim := c.submit("victim", `ck="$GANTRY_CHECKPOINT_DIR/step"; i=0; [ -f "$ck" ] && i=$(cat "$ck")
echo "resuming at $i"
trap 'echo "$i" > "$ck"; echo "checkpointed at $i (request: $(grep -c reason.:.preempt "$GANTRY_CHECKPOINT_REQUEST_FILE"))"; exit 0' USR1
while [ $i -lt 80 ]; do i=$((i+1)); sleep 0.05; done
echo "done at $i"`, func(s *jobs.Spec) { s.PriorityClass = "test"; s.Preemptible = &yes })
	c.waitState(victim.ID, models.JobRunning)
	c.waitFor("the victim to make progress", func() bool { return strings.Contains(c.output(victim.ID, 1, "stdout"), "resuming at 0") })
	prod := c.submit("urgent", `echo "production ran"`, func(s *jobs.Spec) { s.PriorityClass = "production" })

	c.waitState(prod.ID, models.JobSucceeded)
	done := c.waitState(victim.ID, models.JobSucceeded)
	if done.Attempt != 2 || done.Retries != 0 {
		t.Fatalf("victim = attempt %d retries %d, want a second attempt without a retry spent", done.Attempt, done.Retries)
	}
	first := c.output(victim.ID, 1, "stdout")
	m := regexp.MustCompile(`checkpointed at (\d+) \(request: 1\)`).FindStringSubmatch(first)
	if m == nil || m[1] == "0" {
		t.Fatalf("attempt 1 did not checkpoint on request: %q", first)
	}
	if second := c.output(victim.ID, 2, "stdout"); second != fmt.Sprintf("resuming at %s\ndone at 80\n", m[1]) {
		t.Fatalf("attempt 2 did not resume from step %s: %q", m[1], second)
	}
	if got := c.output(prod.ID, 1, "stdout"); got != "production ran\n" {
		t.Fatalf("production output = %q", got)
	}
}

// A gang of two replicas runs one replica on each of two nodes, together.
func TestE2EGangOnTwoAgents(t *testing.T) {
	c := newCluster(t)
	c.startAgent("gpu-a", "1xL4-24GB")
	c.startAgent("gpu-b", "1xL4-24GB")
	j := c.submit("ddp", `echo "replica $GANTRY_REPLICA of job $GANTRY_JOB_ID"; sleep 0.3`, func(s *jobs.Spec) { s.Replicas = 2 })
	c.waitState(j.ID, models.JobSucceeded)
	nodes := map[string]bool{}
	for r := range 2 {
		a, err := c.st.AllocationByAttempt(c.ctx, j.ID, 1, r)
		if err != nil || a.State != models.AllocEnded || a.ExitCode == nil || *a.ExitCode != 0 {
			t.Fatalf("replica %d = %+v, %v", r, a, err)
		}
		n, _ := c.st.NodeByID(c.ctx, a.NodeID)
		nodes[n.Name] = true
	}
	if len(nodes) != 2 {
		t.Fatalf("both replicas ran on %v", nodes)
	}
	out := c.output(j.ID, 1, "stdout")
	for r := range 2 {
		if !strings.Contains(out, fmt.Sprintf("replica %d of job %d\n", r, j.ID)) {
			t.Errorf("output lacks replica %d: %q", r, out)
		}
	}
}
