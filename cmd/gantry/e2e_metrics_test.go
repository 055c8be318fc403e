package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// readmeBlock returns the code block of README.md that follows the comment <!-- name -->,
// so that the documented snippets are the ones tested.
func readmeBlock(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- " + regexp.QuoteMeta(name) + " -->\n```[a-z]*\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatalf("README.md has no code block after <!-- %s -->", name)
	}
	return string(m[1])
}

// pythonInterpreter is the real python3 (not a version manager's shim, which needs
// the user's HOME): jobs get a HOME of their own.
func pythonInterpreter(t *testing.T) string {
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skip("python3 is not installed: the README's Python snippet is not run")
	}
	return strings.TrimSpace(string(out))
}

// Real jobs report metrics with their job token, by the README's curl line and
// Python snippet; what they report is stored, a token speaks for its own job only,
// and no token reaches a log.
func TestE2EJobsReportMetricsWithTheirToken(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	c := newCluster(t)
	c.startAgent("gpu-1", "2xL4-24GB")
	curl := c.submit("curl", readmeBlock(t, "job-metrics-curl")+`
curl -sS -o /dev/null -w 'other job: %{http_code}\n' -H "Authorization: Bearer $GANTRY_JOB_TOKEN" -H 'Content-Type: application/json' \
  -d '{"points": [{"step": 1, "values": {"loss": 1}}]}' "$GANTRY_SERVER/api/v1/jobs/$((GANTRY_JOB_ID + 1000))/metrics"`)
	script := filepath.Join(c.dir, "report.py")
	if err := os.WriteFile(script, []byte(readmeBlock(t, "job-metrics-python")), 0o644); err != nil {
		t.Fatal(err)
	}
	py := c.submit("python", `exec "`+pythonInterpreter(t)+`" `+script)
	spin := c.submit("spin", `end=$(($(date +%s) + 3)); while [ "$(date +%s)" -lt $end ]; do :; done`)

	c.waitState(curl.ID, models.JobSucceeded)
	if out := c.output(curl.ID, 1, "stdout"); !strings.Contains(out, `{"stored":3,"dropped":0}`) || !strings.Contains(out, "other job: 403") {
		t.Fatalf("curl job printed %q; want 3 values stored and another job's metrics refused", out)
	}
	c.waitState(py.ID, models.JobSucceeded)
	if out := c.output(py.ID, 1, "stdout"); strings.Count(out, "{'stored': 100, 'dropped': 0}") != 2 || !strings.Contains(out, "{'stored': 1, 'dropped': 0}") {
		t.Fatalf("python job printed %q, stderr %q", out, c.output(py.ID, 1, "stderr"))
	}
	metrics := func(id int64, name string) []models.JobMetric {
		got, err := c.st.JobMetrics(c.ctx, store.JobMetricFilter{JobID: id, Names: []string{name}})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if loss := metrics(curl.ID, "loss"); len(loss) != 1 || loss[0].Step != 100 || loss[0].Value != 0.42 {
		t.Errorf("curl job's loss = %+v", loss)
	}
	if ck := metrics(curl.ID, telemetry.MetricCheckpoint); len(ck) != 1 || c.job(curl.ID).LastCheckpointAt == nil {
		t.Errorf("curl job's checkpoints = %+v", ck)
	}
	if loss := metrics(py.ID, "loss"); len(loss) != 100 || loss[99].Step != 100 || loss[99].Value != 0.02 {
		t.Errorf("python job's loss = %d points, last %+v", len(loss), loss[len(loss)-1])
	}
	if n := len(metrics(py.ID, "samples_per_sec")); n != 100 {
		t.Errorf("python job's throughput = %d points, want 100", n)
	}
	// The agent measures what each job's processes use, and its heartbeats carry it.
	c.waitState(spin.ID, models.JobSucceeded)
	cpu := metrics(spin.ID, telemetry.MetricCPUMilli)
	busy := false
	for _, p := range cpu {
		busy = busy || p.Value >= 20 // a share of a loaded machine's cores; a waiting job reports 0
	}
	if !busy {
		t.Errorf("the spinning job's CPU use = %+v; want a report of at least 0.02 core", cpu)
	}
	logs, _ := filepath.Glob(filepath.Join(c.dir, "*.log"))
	for _, l := range logs {
		if b, _ := os.ReadFile(l); strings.Contains(string(b), "gjb_") {
			t.Errorf("a job token leaked into %s", filepath.Base(l))
		}
	}
}

// A job asked to checkpoint that says through the API it saved one is stopped at
// once: its class's grace (raised to ten minutes here) is not waited out. The SIGTERM
// goes to the job's whole process group, so curl ignores it and prints its answer.
func TestE2ECheckpointAnswerCutsTheGraceShort(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	c := newCluster(t)
	storetest.Exec(t, store.Config{DataDir: filepath.Join(c.dir, "server")}, "UPDATE priority_classes SET checkpoint_grace_sec = 600 WHERE name = 'test'")
	c.startAgent("gpu-1", "1xL4-24GB")
	yes := true
	victim := c.submit("victim", `[ "$GANTRY_ATTEMPT" = 1 ] || { echo resumed; exit 0; }
trap '(trap "" TERM; curl -sS -o /dev/null -w "answered %{http_code}\n" -H "Authorization: Bearer $GANTRY_JOB_TOKEN" -H "Content-Type: application/json" -d "{\"checkpoints\": [{\"step\": 7}]}" "$GANTRY_SERVER/api/v1/jobs/$GANTRY_JOB_ID/metrics")' USR1
trap 'echo "got TERM"; exit 0' TERM
echo started; while :; do sleep 0.05; done`, func(s *jobs.Spec) { s.PriorityClass = "test"; s.Preemptible = &yes })
	c.waitState(victim.ID, models.JobRunning)
	c.waitFor("the victim to start", func() bool { return strings.Contains(c.output(victim.ID, 1, "stdout"), "started") })
	prod := c.submit("urgent", `echo "production ran"`, func(s *jobs.Spec) { s.PriorityClass = "production" })
	c.waitState(prod.ID, models.JobSucceeded)
	done := c.waitState(victim.ID, models.JobSucceeded)
	if out := c.output(victim.ID, 1, "stdout"); done.Attempt != 2 || !strings.Contains(out, "answered 200\ngot TERM\n") {
		t.Fatalf("victim = attempt %d, first attempt printed %q; want an answer, then SIGTERM", done.Attempt, out)
	}
	a, _ := c.allocation(victim.ID, 1)
	if a.CheckpointSavedAt == nil {
		t.Error("the first attempt's answer was not recorded")
	}
	evs, err := c.st.AuditEventsAfter(context.Background(), store.AuditFilter{Action: "job.checkpointed"}, 0, 10)
	if err != nil || len(evs) != 1 || !strings.Contains(evs[0].Detail, `"answers_stop":true`) {
		t.Fatalf("checkpoint audit = %+v, %v", evs, err)
	}
}
