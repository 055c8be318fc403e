package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/slurm"
	"github.com/gantry-gpu/gantry/services/slurm/slurmtest"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// These tests run Gantry's Slurm pools on the throw-away Slurm of scripts/slurm.sh
// (one node, 2 a100 and 2 l4 GPUs by GRES, QOS test < research < production with
// preemption by requeue), one test at a time (slurmtest.Conf).

// slurmEnv is a dispatch service with one Slurm pool, "hpc", on partition gpu.
type slurmEnv struct {
	*env
	dbConf store.Config
	conf   string // the slurm.conf the pool's commands read
	cfg    slurm.Config
	pool   *models.NodePool
	scfg   dispatch.SlurmConfig
	sp     *dispatch.SlurmPools
}

// eachSlurm runs fn on every database backend with a Slurm pool on a test Slurm, the
// backends at once when there are test Slurms for both. tune, when given, changes the
// pools' configuration (the runner it wraps is the commands').
func eachSlurm(t *testing.T, tune func(*dispatch.SlurmConfig), fn func(t *testing.T, s *slurmEnv)) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			conf := slurmtest.Conf(t)
			dbConf := b.Config(t)
			st := storetest.Open(t, dbConf)
			e := newEnv(t, st, realScheduler(t))
			e.clock.mu.Lock()
			e.clock.real = true
			e.clock.mu.Unlock()
			dir := t.TempDir()
			cfg := slurm.Config{
				Partition: "gpu", SlurmConf: conf, LogDir: filepath.Join(dir, "logs"), CheckpointDir: filepath.Join(dir, "ckpt"),
				QOS:       map[string]string{"production": "production", "research": "research", "test": "test"},
				GRESTypes: map[string]string{"A100-80GB": "a100", "L4-24GB": "l4"},
			}
			raw, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			pool := &models.NodePool{Name: "hpc", Provider: "slurm", CapacityType: models.CapacityOwned, ProviderConfig: string(raw)}
			if err := st.CreateNodePool(e.ctx, pool); err != nil {
				t.Fatal(err)
			}
			scfg := dispatch.SlurmConfig{
				Follow:         slurm.FollowConfig{Interval: 200 * time.Millisecond, MaxBackoff: 2 * time.Second, LostAfter: 5 * time.Minute},
				InventoryEvery: 5 * time.Second, LogChunk: 64 << 10,
			}
			scfg.Runner = func(c slurm.Config) slurm.Runner {
				return slurm.NewExecRunner(c.BinDir, c.SlurmConf, c.CommandTimeout())
			}
			if tune != nil {
				tune(&scfg)
			}
			s := &slurmEnv{env: e, dbConf: dbConf, conf: conf, cfg: cfg, pool: pool, scfg: scfg, sp: e.svc.SlurmPools(scfg)}
			s.cancelAll() // what an interrupted test left
			s.nodesIdle()
			t.Cleanup(s.cancelAll)
			fn(t, s)
		})
	}
}

// tick runs one scheduling pass and one pass over the Slurm pools.
func (s *slurmEnv) tick() {
	s.svc.Tick(s.ctx)
	s.sp.Tick(s.ctx)
}

// until ticks until cond holds, failing after two minutes with what.
// wantChargedAsAllocated meters the ledger at 1,000 micro-units a GPU-second of an
// A100 and checks that it charged alloc, a run of 1 GPU, for its whole seconds from
// start to end; what names the run in the failure.
func (s *slurmEnv) wantChargedAsAllocated(alloc models.Allocation, what string) {
	s.t.Helper()
	acc, err := accounting.New(s.st, s.audit, accounting.Config{})
	if err != nil {
		s.t.Fatal(err)
	}
	rate := models.CostRate{Resource: models.ResourceGPU, GPUModel: "A100-80GB", RateMicros: 3_600_000, EffectiveFrom: time.Now().Add(-24 * time.Hour)}
	if _, err := acc.CreateRate(s.ctx, rate); err != nil {
		s.t.Fatal(err)
	}
	rep, err := acc.Meter(s.ctx, time.Now())
	if err != nil {
		s.t.Fatal(err)
	}
	ran := alloc.EndedAt.Truncate(time.Second).Sub(alloc.StartedAt.Truncate(time.Second))
	if want := int64(ran/time.Second) * 1000; rep.ChargedMicros != want {
		s.t.Errorf("charged %d micro-units for %s (%s) of 1 GPU at 1000 per GPU-second, want %d (report %+v)", rep.ChargedMicros, what, ran, want, rep)
	}
}

func (s *slurmEnv) until(what string, cond func() bool) {
	s.t.Helper()
	s.untilSaying(what, cond, func() string { return "" })
}

// untilSaying is until that says, when it times out, where things stand.
func (s *slurmEnv) untilSaying(what string, cond func() bool, standing func() string) {
	s.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			out, _ := s.slurmCmd("sinfo", "-h", "-N", "-o", "%N %T %E").Output()
			s.t.Fatalf("timed out waiting for %s; %s; Slurm's nodes: %s", what, standing(), strings.TrimSpace(string(out)))
		}
		s.tick()
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *slurmEnv) untilState(id int64, state string) *models.Job {
	s.t.Helper()
	s.untilSaying("job to be "+state, func() bool {
		j := s.job(id)
		if models.IsTerminal(j.State) && j.State != state {
			evs, _ := s.st.JobEvents(s.ctx, id)
			s.t.Fatalf("job %d ended %s (%s), want %s; events: %s", id, j.State, j.StateReason, state, describeEvents(evs))
		}
		return j.State == state
	}, func() string {
		j := s.job(id)
		evs, _ := s.st.JobEvents(s.ctx, id)
		return fmt.Sprintf("job %d is %s (%s; waits: %s); events: %s", id, j.State, j.StateReason, j.PendingReason, describeEvents(evs))
	})
	return s.job(id)
}

// slurmJobs returns the Slurm job ids Gantry submitted for a job, by attempt.
func (s *slurmEnv) slurmJobs(id int64) []models.SlurmJob {
	s.t.Helper()
	rows, err := s.st.SlurmJobsOfJob(s.ctx, id)
	if err != nil {
		s.t.Fatal(err)
	}
	return rows
}

// cancelAll cancels what the test left in Slurm and waits until its node is free,
// so the next test finds the cluster empty.
func (s *slurmEnv) cancelAll() {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		out, _ := s.slurmCmd("squeue", "-h", "-t", "PD,R,CG,S,CF,RQ,RH,SI,SO,ST", "-o", "%A").Output()
		ids := strings.Fields(string(out))
		if len(ids) == 0 {
			return
		}
		_ = s.slurmCmd("scancel", ids...).Run()
		time.Sleep(500 * time.Millisecond)
	}
}

// nodesIdle resumes nodes an earlier test drained and waits until Slurm has every
// node idle: a test that reads the inventory once must not find a node still
// draining or completing an earlier test's job.
func (s *slurmEnv) nodesIdle() {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		out, _ := s.slurmCmd("sinfo", "-h", "-N", "-o", "%N %T").Output()
		busy := false
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			if len(f) != 2 || f[1] == "idle" {
				continue
			}
			busy = true
			if strings.HasPrefix(f[1], "drain") {
				_ = s.slurmCmd("scontrol", "update", "nodename="+f[0], "state=resume").Run()
			}
		}
		if !busy {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// foreignJob submits a job to the partition outside Gantry and returns its id.
func (s *slurmEnv) foreignJob(t *testing.T, opts, script string) string {
	t.Helper()
	args := append([]string{"--parsable", "-p", "gpu", "-c", "1", "--mem=100M", "-o", "/dev/null"}, strings.Fields(opts)...)
	out, err := s.slurmCmd("sbatch", append(args, "--wrap", script)...).CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch outside Gantry: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func (s *slurmEnv) slurmCmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+s.conf)
	return cmd
}

// logOf returns one stream of one attempt of a job as stored in Gantry's log store.
func (s *slurmEnv) logOf(id int64, attempt int, stream string) string {
	s.t.Helper()
	chunks, err := s.st.LogChunks(s.ctx, store.LogFilter{JobID: id, Attempt: attempt, Stream: stream})
	if err != nil {
		s.t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range chunks {
		b.Write(c.Data)
	}
	return b.String()
}

func describeEvents(evs []models.JobEvent) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString("\n  " + e.FromState + " -> " + e.ToState + " [" + e.Reason + "] " + e.Message)
	}
	return b.String()
}

func (s *slurmEnv) eventsOf(id int64) string {
	s.t.Helper()
	evs, err := s.st.JobEvents(s.ctx, id)
	if err != nil {
		s.t.Fatal(err)
	}
	return describeEvents(evs)
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

// The partition's nodes appear as read-only Gantry nodes with their GPUs; a job
// the scheduler places there runs in Slurm, and Gantry shows it running and
// succeeded, with the Slurm job in its events, its output in the log store (its secret
// value masked, its stderr cut at the log limit) and its allocation charged with the
// times Slurm accounted.
func TestSlurmPoolRunsAJob(t *testing.T) {
	eachSlurm(t, nil, func(t *testing.T, s *slurmEnv) {
		const logLimit = 100_000 // over one LogChunk, so the stderr kept takes two passes
		cfg := testConfig
		cfg.LogLimit = logLimit
		s.svc = s.restartWith(realScheduler(t), cfg)
		s.sp = s.svc.SlurmPools(s.scfg)
		s.tick()
		node, err := s.st.NodeByName(s.ctx, "hpc.node1")
		if err != nil {
			t.Fatal(err)
		}
		devs, _ := s.st.DevicesOfNode(s.ctx, node.ID)
		if node.State != models.NodeReady || node.Runtime != models.RuntimeSlurm || *node.PoolID != s.pool.ID || node.CPUMilli != 8000 ||
			len(devs) != 4 || devs[0].Model != "A100-80GB" || devs[2].Model != "L4-24GB" {
			t.Fatalf("Slurm node %+v with %+v", node, devs)
		}
		if _, err := s.svc.SetNodeState(s.ctx, "hpc.node1", models.NodeDraining, "maintenance", time.Now()); !isField(err, "state") {
			t.Errorf("draining a Slurm node from Gantry: %v, want a state field error", err)
		}
		if _, err := s.svc.SetNodeLabels(s.ctx, "hpc.node1", map[string]string{"rack": "a"}); !isField(err, "labels") {
			t.Errorf("labelling a Slurm node from Gantry: %v, want a labels field error", err)
		}
		if _, err := s.svc.SetNodePool(s.ctx, "hpc.node1", ""); !isField(err, "pool") {
			t.Errorf("moving a Slurm node out of its pool: %v, want a pool field error", err)
		}
		if _, err := s.svc.RemoveNode(s.ctx, "hpc.node1", "gone"); !isField(err, "node") {
			t.Errorf("removing a Slurm node from Gantry: %v, want a node field error", err)
		}
		if _, err := s.svc.SetNodeConfidential(s.ctx, "hpc.node1", true); !isField(err, "confidential") {
			t.Errorf("flagging a Slurm node confidential from Gantry: %v, want a confidential field error", err)
		}
		token, _, err := dispatch.CreateJoinToken(s.ctx, s.st, s.audit, time.Now(), dispatch.JoinTokenSpec{Name: "impostor", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.svc.Join(s.ctx, agentapi.JoinRequest{JoinToken: token, Name: "hpc.node1", Runtime: agentapi.RuntimeProcess, CPUMilli: 1000, MemoryMiB: 1024})
		if !isField(err, "name") {
			t.Errorf("an agent joining as a Slurm node: %v, want a name field error", err)
		}
		if n, _ := s.st.NodeByName(s.ctx, "hpc.node1"); n.CredentialHash != "" || n.Runtime != models.RuntimeSlurm {
			t.Errorf("the refused join changed the Slurm node: %+v", n)
		}

		j := s.submit("hello", 1, func(j *models.Job) {
			j.GPUModel, j.Env = "A100-80GB", `{"GREETING":"hello"}`
			j.Command = `["sh","-c","echo \"$GREETING from $GANTRY_JOB_ID attempt $GANTRY_ATTEMPT on GPU $CUDA_VISIBLE_DEVICES\"; echo \"token $HF_TOKEN\"; echo warning >&2; head -c 200000 /dev/zero | tr -c x x >&2; sleep 2"]`
		})
		const secret = "hf_slurm-secret-61"
		if err := s.st.SetJobSecretEnv(s.ctx, j.ID, map[string]string{"HF_TOKEN": secret}); err != nil {
			t.Fatal(err)
		}
		s.untilState(j.ID, models.JobRunning)
		done := s.untilState(j.ID, models.JobSucceeded)
		if done.ExitCode == nil || *done.ExitCode != 0 || done.Attempt != 1 {
			t.Errorf("succeeded job: exit %v attempt %d", done.ExitCode, done.Attempt)
		}
		rows := s.slurmJobs(j.ID)
		if len(rows) != 1 {
			t.Fatalf("Slurm jobs of the job: %+v", rows)
		}
		id := rows[0].SlurmJobID
		wantContains(t, "events", s.eventsOf(j.ID), "attempt 1 submitted to Slurm partition gpu as job "+id,
			"Slurm job "+id+" run 1 started on node1", "Slurm job "+id+" run 1 ended COMPLETED after", "with exit code 0")
		s.until("the job's output to be stored", func() bool { return len(s.slurmJobs(j.ID)) == 1 && s.slurmJobs(j.ID)[0].LogsDone })
		if got := s.logOf(j.ID, 1, agentapi.StreamStdout); got != "hello from "+strconv.FormatInt(j.ID, 10)+" attempt 1 on GPU 0\ntoken "+strings.Repeat("*", len(secret))+"\n" {
			t.Errorf("stdout %q", got)
		}
		if got, want := s.logOf(j.ID, 1, agentapi.StreamStderr), "warning\n"+strings.Repeat("x", logLimit-len("warning\n")); got != want {
			t.Errorf("stderr: %d bytes %.20q…, want %d: %.20q…", len(got), got, len(want), want)
		}
		wantContains(t, "events", s.eventsOf(j.ID), "stderr reached 100000 bytes, the most kept of one stream")
		allocs, _ := s.st.AllocationsOfJob(s.ctx, j.ID)
		if len(allocs) != 1 || allocs[0].State != models.AllocEnded || allocs[0].StartedAt == nil || allocs[0].EndedAt == nil ||
			allocs[0].EndedAt.Sub(*allocs[0].StartedAt) < 2*time.Second || allocs[0].NodeID != node.ID || allocs[0].GPUMilli != 1000 {
			t.Errorf("allocation %+v", allocs)
		}

		// The ledger charges the run like an agent's: 1 GPU for the time Slurm accounted.
		s.wantChargedAsAllocated(allocs[0], "a run")
	})
}

func isField(err error, field string) bool {
	var fe *models.FieldError
	return errors.As(err, &fe) && fe.Field == field
}

// slurmState is what squeue says of a Slurm job ("" once it left squeue).
func (s *slurmEnv) slurmState(id string) string {
	out, _ := s.slurmCmd("squeue", "-h", "-t", "all", "-j", id, "-o", "%T").Output()
	return strings.TrimSpace(string(out))
}

// Cancelling a job in Gantry cancels its Slurm job (scancel), running or still
// waiting in Slurm's queue, and what ran is charged from Slurm's accounting.
func TestSlurmPoolCancels(t *testing.T) {
	// Gantry reads the node's state once, so it places a job there after Slurm drained it.
	eachSlurm(t, func(c *dispatch.SlurmConfig) { c.InventoryEvery = time.Hour }, func(t *testing.T, s *slurmEnv) {
		running := s.submit("long", 2, func(j *models.Job) { j.GPUModel, j.Command = "A100-80GB", `["sleep","300"]` })
		s.untilState(running.ID, models.JobRunning)
		// Another job Slurm cannot start: it waits in Slurm's queue, for a drained node.
		if out, err := s.slurmCmd("scontrol", "update", "nodename=node1", "state=drain", "reason=gantry test").CombinedOutput(); err != nil {
			t.Fatalf("drain node1: %v: %s", err, out)
		}
		t.Cleanup(func() { _ = s.slurmCmd("scontrol", "update", "nodename=node1", "state=resume").Run() })
		waiting := s.submit("waits", 2, func(j *models.Job) { j.GPUModel, j.Command = "L4-24GB", `["true"]` })
		s.until("the second job to wait in Slurm", func() bool {
			rows := s.slurmJobs(waiting.ID)
			return len(rows) == 1 && s.slurmState(rows[0].SlurmJobID) == "PENDING" && strings.Contains(s.job(waiting.ID).PendingReason, "waits:")
		})

		for _, j := range []*models.Job{running, waiting} {
			if _, err := s.svc.CancelJob(s.ctx, j.ID, "user:ada", ""); err != nil {
				t.Fatal(err)
			}
		}
		for _, j := range []*models.Job{running, waiting} {
			id := s.slurmJobs(j.ID)[0].SlurmJobID
			s.until("Slurm job "+id+" to be cancelled", func() bool {
				st := s.slurmState(id)
				return st == "CANCELLED" || st == ""
			})
			s.until("the end of Slurm job "+id+" to be applied", func() bool { return s.slurmJobs(j.ID)[0].Done })
			s.wantState(j.ID, models.JobCancelled)
		}
		allocs, _ := s.st.AllocationsOfJob(s.ctx, running.ID)
		// Slurm's times are whole seconds: a run cancelled within the second it started
		// ends when it started.
		if a := allocs[0]; a.State != models.AllocEnded || a.StartedAt == nil || a.EndedAt == nil || a.EndedAt.Before(*a.StartedAt) {
			t.Errorf("the cancelled run's allocation: %+v", a)
		}
		allocs, _ = s.st.AllocationsOfJob(s.ctx, waiting.ID)
		if a := allocs[0]; a.State != models.AllocEnded || a.StartedAt != nil {
			t.Errorf("the allocation of the job that never ran: %+v", a)
		}
	})
}

// Holding a job that waits in Slurm's queue holds its Slurm job there (scontrol
// hold): Gantry shows it held with Slurm's reason, and it does not start while held,
// whatever room Slurm has. Released, the scheduler places it again and the same
// Slurm job is released (scontrol release) and runs as the job's next attempt, which
// its GANTRY_ATTEMPT names.
func TestSlurmPoolHoldsAndReleases(t *testing.T) {
	// Gantry reads the node's state once, so it places a job there after Slurm drained it.
	eachSlurm(t, func(c *dispatch.SlurmConfig) { c.InventoryEvery = time.Hour }, func(t *testing.T, s *slurmEnv) {
		s.tick()
		if n, err := s.st.NodeByName(s.ctx, "hpc.node1"); err != nil || n.State != models.NodeReady {
			t.Fatalf("node1 in Gantry before the test: %+v, %v", n, err)
		}
		if out, err := s.slurmCmd("scontrol", "update", "nodename=node1", "state=drain", "reason=gantry test").CombinedOutput(); err != nil {
			t.Fatalf("drain node1: %v: %s", err, out)
		}
		t.Cleanup(func() { _ = s.slurmCmd("scontrol", "update", "nodename=node1", "state=resume").Run() })
		j := s.submit("held", 1, func(j *models.Job) {
			j.GPUModel, j.Command = "L4-24GB", `["sh","-c","echo released as attempt $GANTRY_ATTEMPT"]`
		})
		last := ""
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("last seen: %s; events: %s", last, s.eventsOf(j.ID))
			}
		})
		s.until("the job to wait in Slurm", func() bool {
			rows := s.slurmJobs(j.ID)
			last = fmt.Sprintf("Slurm jobs %+v", rows)
			if len(rows) == 1 {
				last += ", in Slurm " + s.slurmState(rows[0].SlurmJobID)
			}
			return len(rows) == 1 && s.slurmState(rows[0].SlurmJobID) == "PENDING"
		})
		id := s.slurmJobs(j.ID)[0].SlurmJobID
		held, err := s.svc.HoldJob(s.ctx, j.ID, "user:ada", "")
		if err != nil || held.State != models.JobHeld {
			t.Fatalf("hold of a job waiting in Slurm = %+v, %v", held, err)
		}
		slurmReason := func() string {
			out, _ := s.slurmCmd("squeue", "-h", "-j", id, "-o", "%T %r").Output()
			return strings.TrimSpace(string(out))
		}
		s.until("Slurm to hold the job and Gantry to say so", func() bool {
			return strings.HasPrefix(slurmReason(), "PENDING JobHeld") && strings.Contains(s.job(j.ID).PendingReason, "is held in Slurm's queue")
		})
		wantContains(t, "the held job's reason", s.job(j.ID).PendingReason, "Slurm job "+id+" is held in Slurm's queue: JobHeld")
		if out, err := s.slurmCmd("scontrol", "update", "nodename=node1", "state=resume").CombinedOutput(); err != nil {
			t.Fatalf("resume node1: %v: %s", err, out)
		}
		for range 5 {
			s.tick()
		}
		if got := slurmReason(); !strings.HasPrefix(got, "PENDING JobHeld") {
			t.Errorf("the held Slurm job with its node back: %q, want still held", got)
		}
		s.wantState(j.ID, models.JobHeld)

		if _, err := s.svc.ReleaseJob(s.ctx, j.ID, "user:ada", ""); err != nil {
			t.Fatal(err)
		}
		done := s.untilState(j.ID, models.JobSucceeded)
		rows := s.slurmJobs(j.ID)
		if len(rows) != 1 || rows[0].SlurmJobID != id || rows[0].CurrentAttempt != 2 || done.Attempt != 2 {
			t.Fatalf("the released attempt runs as the held Slurm job %s: %+v (job at attempt %d)", id, rows, done.Attempt)
		}
		wantContains(t, "events", s.eventsOf(j.ID), "scheduled -> held [held] held by user:ada", "held -> queued [released]",
			"attempt 2 released in Slurm: job "+id, "scheduled -> running [started] Slurm job "+id+" run 1 started", "running -> succeeded")
		s.until("the job's output to be stored", func() bool { return s.slurmJobs(j.ID)[0].LogsDone })
		// The job sees the attempt Gantry counts, not the one its Slurm job was submitted as.
		if got := s.logOf(j.ID, 2, agentapi.StreamStdout); got != "released as attempt 2\n" {
			t.Errorf("output of the released attempt: %q", got)
		}
		allocs, _ := s.st.AllocationsOfJob(s.ctx, j.ID)
		if len(allocs) != 2 || allocs[0].StopReason != "held-in-slurm" || allocs[0].StartedAt != nil || allocs[1].StartedAt == nil || allocs[1].EndedAt == nil {
			t.Errorf("the held attempt ends uncharged, the released one is charged: %+v", allocs)
		}
	})
}

// Gantry's Slurm jobs of two jobs have ids that other jobs hold now, jobs submitted
// outside Gantry (as when Slurm's job ids restart under a leader that knew the old
// ones): cancelling the one and holding the other leave those jobs alone, and each
// Gantry job says why.
func TestSlurmPoolSparesAnotherJobUnderItsID(t *testing.T) {
	eachSlurm(t, func(c *dispatch.SlurmConfig) { c.InventoryEvery = time.Hour }, func(t *testing.T, s *slurmEnv) {
		s.tick()
		// A drained node keeps every job waiting in Slurm's queue, where a hold shows.
		if out, err := s.slurmCmd("scontrol", "update", "nodename=node1", "state=drain", "reason=gantry test").CombinedOutput(); err != nil {
			t.Fatalf("drain node1: %v: %s", err, out)
		}
		t.Cleanup(func() { _ = s.slurmCmd("scontrol", "update", "nodename=node1", "state=resume").Run() })
		cancelled := s.submit("cancelled", 1, func(j *models.Job) { j.GPUModel, j.Command = "L4-24GB", `["true"]` })
		held := s.submit("held", 1, func(j *models.Job) { j.GPUModel, j.Command = "L4-24GB", `["echo","released"]` })
		s.until("both jobs to wait in Slurm", func() bool {
			for _, j := range []*models.Job{cancelled, held} {
				if rows := s.slurmJobs(j.ID); len(rows) != 1 || s.slurmState(rows[0].SlurmJobID) != "PENDING" {
					return false
				}
			}
			return true
		})
		// The leader that follows them from here finds other jobs under their ids.
		theirs := map[int64]string{}
		for _, j := range []*models.Job{cancelled, held} {
			r := s.slurmJobs(j.ID)[0]
			if out, err := s.slurmCmd("scancel", r.SlurmJobID).CombinedOutput(); err != nil {
				t.Fatalf("scancel %s: %v: %s", r.SlurmJobID, err, out)
			}
			r.SlurmJobID = s.foreignJob(t, "-J theirs", "sleep 300")
			theirs[j.ID] = r.SlurmJobID
			if err := s.st.SaveSlurmJob(s.ctx, &r); err != nil {
				t.Fatal(err)
			}
		}
		s.sp = s.svc.SlurmPools(s.scfg)
		if _, err := s.svc.CancelJob(s.ctx, cancelled.ID, "user:ada", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.svc.HoldJob(s.ctx, held.ID, "user:ada", ""); err != nil {
			t.Fatal(err)
		}
		s.until("the follower to find both Gantry jobs gone from Slurm", func() bool {
			return s.slurmJobs(cancelled.ID)[0].Done && s.slurmJobs(held.ID)[0].Done
		})
		for id, slurmID := range theirs {
			out, _ := s.slurmCmd("squeue", "-h", "-t", "all", "-j", slurmID, "-o", "%T %r").Output()
			if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "PENDING ") || strings.Contains(got, "JobHeld") {
				t.Errorf("the other job under the id of job %d's Slurm job: %q, want it waiting, neither cancelled nor held", id, got)
			}
		}
		s.wantState(cancelled.ID, models.JobCancelled)
		name := func(j *models.Job) string { return s.installed().SlurmName(j.ID, 1) }
		wantContains(t, "events of the cancelled job", s.eventsOf(cancelled.ID),
			"cancelled -> cancelled [slurm-id-reused] Slurm job "+theirs[cancelled.ID]+" not cancelled: that id is no longer "+name(cancelled)+
				`, which Gantry submitted, but another job, "theirs" of user `)
		wantContains(t, "events of the held job", s.eventsOf(held.ID),
			"held -> held [slurm-id-reused] Slurm job "+theirs[held.ID]+" not held: that id is no longer "+name(held)+`, which Gantry submitted, but another job, "theirs" of user `)
		wantContains(t, "the held job's reason", s.wantState(held.ID, models.JobHeld).PendingReason,
			"Slurm job "+theirs[held.ID]+" is no longer "+name(held)+`, which Gantry submitted: Slurm gives that id to another job, "theirs" of user `,
			"the job stays held, and is submitted again once released")

	})
}

// A job running on Slurm is held, so Gantry asks its Slurm job to checkpoint; Slurm
// runs another job under that id now, one submitted outside Gantry (as when Slurm's
// job ids restart under a leader that knew the old ones): that job is not signalled,
// the Gantry job says why, and it ends held, as its hold asked.
func TestSlurmPoolSparesAnotherJobWhenCheckpointing(t *testing.T) {
	eachSlurm(t, func(c *dispatch.SlurmConfig) { c.InventoryEvery = time.Hour }, func(t *testing.T, s *slurmEnv) {
		j := s.submit("held", 1, func(j *models.Job) { j.GPUModel, j.Command = "L4-24GB", `["sleep","300"]` })
		s.untilState(j.ID, models.JobRunning)
		// No pass of the leader from here until a new one follows the job: it would see
		// Gantry's Slurm job cancelled.
		r := s.slurmJobs(j.ID)[0]
		if out, err := s.slurmCmd("scancel", r.SlurmJobID).CombinedOutput(); err != nil {
			t.Fatalf("scancel %s: %v: %s", r.SlurmJobID, err, out)
		}
		signals := filepath.Join(t.TempDir(), "signals")
		theirs := s.foreignJob(t, "-J theirs", "trap 'echo USR1 >> "+signals+"' USR1; while :; do sleep 0.2; done")
		deadline := time.Now().Add(time.Minute)
		for s.slurmState(theirs) != "RUNNING" || s.slurmState(r.SlurmJobID) == "RUNNING" {
			if time.Now().After(deadline) {
				t.Fatalf("Slurm job %s: %s, the other job %s: %s; want it running alone", r.SlurmJobID, s.slurmState(r.SlurmJobID), theirs, s.slurmState(theirs))
			}
			time.Sleep(200 * time.Millisecond)
		}
		r.SlurmJobID = theirs
		if err := s.st.SaveSlurmJob(s.ctx, &r); err != nil {
			t.Fatal(err)
		}
		s.sp = s.svc.SlurmPools(s.scfg)
		if _, err := s.svc.HoldJob(s.ctx, j.ID, "user:ada", ""); err != nil {
			t.Fatal(err)
		}
		s.untilState(j.ID, models.JobHeld)
		if got := s.slurmState(theirs); got != "RUNNING" {
			t.Errorf("the other job under the id: %q, want it running", got)
		}
		time.Sleep(time.Second) // a USR1 sent would have reached its trap
		if got, _ := os.ReadFile(signals); len(got) != 0 {
			t.Errorf("the other job under the id was signalled: %q", got)
		}
		wantContains(t, "events", s.eventsOf(j.ID), "[slurm-id-reused] Slurm job "+theirs+" not signalled to checkpoint: that id is no longer "+
			s.installed().SlurmName(j.ID, 1)+`, which Gantry submitted, but another job, "theirs" of user `)
		if rows := s.slurmJobs(j.ID); len(rows) != 1 || !rows[0].Done {
			t.Errorf("Gantry's Slurm job, gone from Slurm: %+v", rows)
		}
	})
}

// checkpointing is a job that counts steps, saves its step on USR1 and exits, and
// once resumed from that checkpoint says so and succeeds.
const checkpointing = `state="$GANTRY_CHECKPOINT_DIR/state"
if [ -f "$state" ]; then echo "resumed from $(cat "$state") in attempt $GANTRY_ATTEMPT"; exit 0; fi
step=0
trap 'echo "step-$step" > "$state"; echo "checkpointed at step $step"; exit 0' USR1
touch "$GANTRY_CHECKPOINT_DIR/running"
while :; do step=$((step + 1)); sleep 0.2; done`

func checkpointingJob(j *models.Job) {
	cmd, _ := json.Marshal([]string{"bash", "-c", checkpointing})
	j.GPUModel, j.Command, j.PriorityClass, j.Preemptible = "A100-80GB", string(cmd), "test", true
}

// A job submitted to Slurm outside Gantry with a higher QOS preempts a Gantry job:
// Slurm sends USR1 (the job checkpoints), requeues it and runs it again; Gantry
// follows it through preempting and queued to its next attempt on the same Slurm
// job, which resumes from the checkpoint, and charges both runs.
func TestSlurmQOSPreemptionCheckpointsAndRequeues(t *testing.T) {
	eachSlurm(t, nil, func(t *testing.T, s *slurmEnv) {
		victim := s.submit("victim", 2, checkpointingJob)
		s.untilState(victim.ID, models.JobRunning)
		waitFile(t, filepath.Join(s.cfg.CheckpointDir, "", checkpointDirOf(t, s, victim.ID), "running"))
		time.Sleep(time.Second)
		s.foreignJob(t, "--qos=production --gres=gpu:a100:2", "sleep 2")
		s.until("the victim's second attempt to run", func() bool {
			j := s.job(victim.ID)
			return j.Attempt == 2 && j.State == models.JobRunning || models.IsTerminal(j.State)
		})
		done := s.untilState(victim.ID, models.JobSucceeded)
		if done.Attempt != 2 || done.Retries != 0 {
			t.Errorf("victim ended at attempt %d with %d retries used", done.Attempt, done.Retries)
		}
		rows := s.slurmJobs(victim.ID)
		if len(rows) != 1 || rows[0].CurrentAttempt != 2 {
			t.Fatalf("one Slurm job runs both attempts: %+v", rows)
		}
		id := rows[0].SlurmJobID
		wantContains(t, "events", s.eventsOf(victim.ID), "running -> preempting [preempted] Slurm job "+id+" run 1 ended PREEMPTED",
			"preempting -> queued [requeued] Slurm requeued job "+id, "queued -> scheduled [requeued] run 2 waits in Slurm as job "+id,
			"scheduled -> running [started] Slurm job "+id+" run 2 started", "running -> succeeded [succeeded]")
		s.until("the victim's output to be stored", func() bool { return s.slurmJobs(victim.ID)[0].LogsDone })
		wantContains(t, "attempt 1's output", s.logOf(victim.ID, 1, agentapi.StreamStdout), "checkpointed at step")
		wantContains(t, "attempt 2's output", s.logOf(victim.ID, 2, agentapi.StreamStdout), "resumed from step-", "in attempt 2")
		if got := s.logOf(victim.ID, 2, agentapi.StreamStdout); strings.Contains(got, "checkpointed") {
			t.Errorf("attempt 2's output repeats attempt 1's: %q", got)
		}
		allocs, _ := s.st.AllocationsOfJob(s.ctx, victim.ID)
		if len(allocs) != 2 || allocs[0].StartedAt == nil || allocs[0].EndedAt == nil || allocs[1].StartedAt == nil || allocs[1].EndedAt == nil ||
			allocs[1].StartedAt.Before(*allocs[0].EndedAt) {
			t.Errorf("both runs are charged, one after the other: %+v", allocs)
		}
	})
}

// checkpointDirOf is the job's checkpoint directory's name under checkpoint_dir.
func checkpointDirOf(t *testing.T, s *slurmEnv, jobID int64) string {
	t.Helper()
	return filepath.Base(s.installed().CheckpointPath(jobID))
}

// installed is the pool's configuration as the server runs it, with this
// installation's tag.
func (s *slurmEnv) installed() slurm.Config {
	s.t.Helper()
	installation, ok, err := s.st.Setting(s.ctx, "slurm.installation")
	if err != nil || !ok {
		s.t.Fatalf("installation tag: %q %v %v", installation, ok, err)
	}
	cfg := s.cfg
	cfg.Installation = installation
	return cfg
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Gantry's scheduler preempts a job on a Slurm pool for a higher class: Gantry asks
// the Slurm job to checkpoint (USR1 to its batch script), cancels it after the
// class's checkpoint grace, and requeues the job, whose next attempt (a new Slurm
// job) resumes from the checkpoint once the preemptor is done.
func TestGantryPreemptionOnSlurmCheckpoints(t *testing.T) {
	eachSlurm(t, nil, func(t *testing.T, s *slurmEnv) {
		storetest.Exec(t, s.dbConf, "UPDATE priority_classes SET checkpoint_grace_sec = 3 WHERE name = 'test'")
		victim := s.submit("victim", 2, checkpointingJob)
		s.untilState(victim.ID, models.JobRunning)
		waitFile(t, filepath.Join(s.cfg.CheckpointDir, checkpointDirOf(t, s, victim.ID), "running"))
		time.Sleep(time.Second)
		urgent := s.submit("urgent", 2, func(j *models.Job) {
			j.GPUModel, j.Command, j.PriorityClass = "A100-80GB", `["sleep","1"]`, "production"
		})
		s.untilState(urgent.ID, models.JobSucceeded)
		done := s.untilState(victim.ID, models.JobSucceeded)
		if done.Attempt != 2 || done.Retries != 0 {
			t.Errorf("victim ended at attempt %d with %d retries used", done.Attempt, done.Retries)
		}
		rows := s.slurmJobs(victim.ID)
		if len(rows) != 2 || rows[0].StopReason != agentapi.StopPreempt || rows[0].SignalledAt == nil {
			t.Fatalf("the first Slurm job was stopped for the preemption, a second runs attempt 2: %+v", rows)
		}
		wantContains(t, "events", s.eventsOf(victim.ID), "running -> preempting [preempt] preempted for job", "preempting -> queued [preempted]",
			"attempt 2 submitted to Slurm partition gpu as job "+rows[1].SlurmJobID)
		s.until("the victim's output to be stored", func() bool { return s.slurmJobs(victim.ID)[1].LogsDone })
		wantContains(t, "attempt 1's output", s.logOf(victim.ID, 1, agentapi.StreamStdout), "checkpointed at step")
		wantContains(t, "attempt 2's output", s.logOf(victim.ID, 2, agentapi.StreamStdout), "resumed from step-", "in attempt 2")
		allocs, _ := s.st.AllocationsOfJob(s.ctx, victim.ID)
		if a := allocs[0]; a.StopReason != agentapi.StopPreempt || a.StartedAt == nil || a.EndedAt == nil {
			t.Errorf("the preempted attempt's allocation: %+v", a)
		}
	})
}

// reconfigure changes the pool's provider configuration, as gantry pool apply does.
func (s *slurmEnv) reconfigure(mutate func(*slurm.Config)) {
	s.t.Helper()
	mutate(&s.cfg)
	raw, err := json.Marshal(s.cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	s.pool.ProviderConfig = string(raw)
	if err := s.st.SaveNodePool(s.ctx, s.pool); err != nil {
		s.t.Fatal(err)
	}
}

// writeConf writes the test Slurm's slurm.conf to path, with the controller's and
// the accounting daemon's ports replaced when unreachable is set.
func (s *slurmEnv) writeConf(path string, unreachable bool) {
	s.t.Helper()
	raw, err := os.ReadFile(s.conf)
	if err != nil {
		s.t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	for i, l := range lines {
		if unreachable && (strings.HasPrefix(l, "SlurmctldPort=") || strings.HasPrefix(l, "AccountingStoragePort=")) {
			k, _, _ := strings.Cut(l, "=")
			lines[i] = k + "=1"
		}
		// A command retries a refused connection for most of MessageTimeout (5 s: ~4 s
		// a command); the pool's answer to an unreachable Slurm does not depend on it.
		if unreachable && strings.HasPrefix(l, "MessageTimeout=") {
			lines[i] = "MessageTimeout=2"
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		s.t.Fatal(err)
	}
}

// Slurm stops answering: the pool's nodes go down with Slurm's words, so nothing new
// is placed there; its jobs say why nothing moves and keep their last known state.
// When Slurm answers again the nodes come back, the end a job reached meanwhile is
// applied, and a job submitted meanwhile runs. Nothing is lost.
func TestSlurmDownAndBack(t *testing.T) {
	eachSlurm(t, nil, func(t *testing.T, s *slurmEnv) {
		conf := filepath.Join(t.TempDir(), "slurm.conf")
		s.writeConf(conf, false)
		s.reconfigure(func(c *slurm.Config) { c.SlurmConf = conf })
		first := s.submit("first", 1, func(j *models.Job) { j.Command = `["sh","-c","sleep 8; echo done"]` })
		s.untilState(first.ID, models.JobRunning)
		id := s.slurmJobs(first.ID)[0].SlurmJobID

		s.writeConf(conf, true)
		s.until("the pool's node to go down", func() bool {
			n, _ := s.st.NodeByName(s.ctx, "hpc.node1")
			return n.State == models.NodeDown
		})
		node, _ := s.st.NodeByName(s.ctx, "hpc.node1")
		wantContains(t, "the down node's reason", node.StateReason, "Slurm does not answer", "Unable to contact slurm controller")
		wantContains(t, "the running job's events", s.eventsOf(first.ID), "running -> running [slurm-unreachable] Slurm does not answer",
			"the job keeps its last known state until Slurm answers again")
		second := s.submit("second", 1, func(j *models.Job) { j.Command = `["true"]` })
		for range 5 {
			s.tick()
		}
		s.wantState(first.ID, models.JobRunning)
		s.wantState(second.ID, models.JobQueued)

		// The first job ends in Slurm while Gantry cannot see it.
		deadline := time.Now().Add(time.Minute)
		for st := s.slurmState(id); st == "RUNNING" || st == "COMPLETING"; st = s.slurmState(id) {
			if time.Now().After(deadline) {
				t.Fatalf("Slurm job %s still %s", id, st)
			}
			time.Sleep(500 * time.Millisecond)
		}
		s.writeConf(conf, false)
		s.untilState(first.ID, models.JobSucceeded)
		s.untilState(second.ID, models.JobSucceeded)
		if n, _ := s.st.NodeByName(s.ctx, "hpc.node1"); n.State != models.NodeReady {
			t.Errorf("node after Slurm came back: %s (%s)", n.State, n.StateReason)
		}
		wantContains(t, "the first job's events", s.eventsOf(first.ID), "running -> running [slurm-reachable] Slurm answers again",
			"running -> succeeded [succeeded] Slurm job "+id+" run 1 ended COMPLETED")
		s.until("the first job's output to be stored", func() bool { return s.slurmJobs(first.ID)[0].LogsDone })
		if got := s.logOf(first.ID, 1, agentapi.StreamStdout); got != "done\n" {
			t.Errorf("output of the job that ended while Slurm was unreachable: %q", got)
		}
	})
}

// garbledSbatch answers the first sbatch with output no Slurm prints, after the
// real sbatch submitted the job: its answer is lost.
type garbledSbatch struct {
	slurm.Runner
	garbled bool
}

func (g *garbledSbatch) Run(ctx context.Context, name string, args []string, stdin []byte) ([]byte, error) {
	out, err := g.Runner.Run(ctx, name, args, stdin)
	if name == "sbatch" && err == nil && !g.garbled {
		g.garbled = true
		return []byte("Submitted batch job " + strings.TrimSpace(string(out)) + ", or so\n"), nil
	}
	return out, err
}

// clusterNamed answers scontrol show config as the controller of the cluster it
// names, when it names one: a slurm.conf edited to reach another cluster, on a
// machine that has one Slurm.
type clusterNamed struct {
	slurm.Runner
	name *atomic.Pointer[string]
}

func (c *clusterNamed) Run(ctx context.Context, name string, args []string, stdin []byte) ([]byte, error) {
	out, err := c.Runner.Run(ctx, name, args, stdin)
	if other := c.name.Load(); other != nil && err == nil && name == "scontrol" && strings.Join(args, " ") == "show config" {
		out = regexp.MustCompile(`(?m)^ClusterName\s*=.*$`).ReplaceAll(out, []byte("ClusterName = "+*other))
	}
	return out, err
}

// clusterSwitch points a Slurm pool's own slurm.conf at another cluster, by the name
// its controller gives (clusterNamed), or back at the test Slurm's.
type clusterSwitch struct {
	s    *slurmEnv
	conf string
	name *atomic.Pointer[string]
}

// reach makes the pool's slurm.conf lead to cluster ("": the test Slurm's own), an
// edit of the file, so that the pool reads its cluster again.
func (c *clusterSwitch) reach(cluster string) {
	c.s.t.Helper()
	if cluster == "" {
		c.name.Store(nil)
	} else {
		c.name.Store(&cluster)
	}
	c.s.writeConf(c.conf, false)
}

// eachSlurmMovable is eachSlurm with the pool on a slurm.conf of its own that c moves
// between clusters; the pool reads its nodes and cluster again only when that file
// changes.
func eachSlurmMovable(t *testing.T, fn func(t *testing.T, s *slurmEnv, c *clusterSwitch)) {
	eachSlurm(t, nil, func(t *testing.T, s *slurmEnv) {
		// The switch is the subtest's own: the stores' subtests run at once.
		other := new(atomic.Pointer[string])
		exec := s.scfg.Runner
		s.scfg.InventoryEvery = time.Hour
		s.scfg.Runner = func(sc slurm.Config) slurm.Runner { return &clusterNamed{Runner: exec(sc), name: other} }
		s.sp = s.svc.SlurmPools(s.scfg)
		c := &clusterSwitch{s: s, conf: filepath.Join(t.TempDir(), "slurm.conf"), name: other}
		s.writeConf(c.conf, false)
		s.reconfigure(func(sc *slurm.Config) { sc.SlurmConf = c.conf })
		fn(t, s, c)
	})
}

// node1 is the pool's Gantry node of the test Slurm's node.
func (s *slurmEnv) node1() *models.Node {
	s.t.Helper()
	n, err := s.st.NodeByName(s.ctx, "hpc.node1")
	if err != nil {
		s.t.Fatal(err)
	}
	return n
}

// A pool follows the cluster its slurm.conf reaches, read again as soon as the file
// changes: edited to reach another cluster while a job of the pool runs on this one,
// the pool does nothing there (its nodes go down saying why) until it reaches the
// job's cluster again, where the job's end is then applied; with no job left, the
// pool's nodes become the new cluster's, audited.
func TestSlurmPoolFollowsItsCluster(t *testing.T) {
	eachSlurmMovable(t, func(t *testing.T, s *slurmEnv, c *clusterSwitch) {
		j := s.submit("stays", 1, func(j *models.Job) { j.Command = `["sh","-c","sleep 10; echo done"]` })
		s.untilState(j.ID, models.JobRunning)
		if got := models.SlurmClusterOf(*s.node1()); got != "gantry" {
			t.Fatalf("the node's cluster: %q", got)
		}

		c.reach("elsewhere")
		s.until("the pool's node to go down", func() bool { return s.node1().State == models.NodeDown })
		wantContains(t, "the node's reason", s.node1().StateReason, "Slurm pool reaches another cluster: "+c.conf+
			" now reaches Slurm cluster elsewhere, not gantry, where 1 of the pool's jobs are; Gantry leaves them alone until the pool reaches gantry again")
		for range 3 {
			s.tick()
		}
		s.wantState(j.ID, models.JobRunning)
		move, err := s.st.SlurmClusterMove(s.ctx, s.pool.ID)
		if err != nil || move.JobsCluster != "gantry" || move.ConfCluster != "elsewhere" || move.Reason != s.node1().StateReason ||
			move.LastSeenAt.After(move.FoundAt) || move.FoundAt.Sub(move.LastSeenAt) > time.Minute {
			t.Errorf("the pool's mark: %+v, %v", move, err)
		}

		c.reach("")
		s.untilState(j.ID, models.JobSucceeded)
		if _, err := s.st.SlurmClusterMove(s.ctx, s.pool.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the pool's mark once it reaches its job's cluster again: %v, want none", err)
		}
		if n := s.node1(); n.State != models.NodeReady || models.SlurmClusterOf(*n) != "gantry" {
			t.Errorf("the node with the pool back on its job's cluster: %+v", n)
		}

		c.reach("elsewhere")
		s.until("the node to be of cluster elsewhere", func() bool { return models.SlurmClusterOf(*s.node1()) == "elsewhere" })
		if n := s.node1(); n.State != models.NodeReady {
			t.Errorf("the node of the pool's new cluster: %s (%s)", n.State, n.StateReason)
		}
		if actions := strings.Join(s.auditActions(), " "); !strings.Contains(actions, "pool.slurm_cluster_changed") {
			t.Errorf("audit %s lacks pool.slurm_cluster_changed", actions)
		}
	})
}

// A pool whose slurm.conf now leads to another cluster while a job of it runs on the
// old one stands still until an admin forgets that job: it fails as lost, saying who
// forgot it and where it ran, audited, and the pool takes the new cluster's nodes.
// Forgetting is refused while the pool still reaches its jobs' cluster.
func TestSlurmPoolForgetsTheJobsOfItsOldCluster(t *testing.T) {
	eachSlurmMovable(t, func(t *testing.T, s *slurmEnv, c *clusterSwitch) {
		j := s.submit("lost", 1, func(j *models.Job) { j.GPUModel, j.Command = "A100-80GB", `["sleep","300"]` })
		s.untilState(j.ID, models.JobRunning)
		if _, err := s.svc.ForgetSlurmJobs(s.ctx, "hpc", "admin:root"); !isField(err, "pool") || !strings.Contains(err.Error(), "Gantry still follows its jobs") {
			t.Errorf("forgetting the jobs of a pool on their cluster: %v, want a pool field error", err)
		}
		s.wantState(j.ID, models.JobRunning)

		c.reach("elsewhere")
		s.until("the pool's node to go down", func() bool { return s.node1().State == models.NodeDown })
		// The pool stands still a while before the admin forgets: what ran is charged
		// until the leader last saw the old cluster, not until then.
		for range 3 {
			s.tick()
		}
		time.Sleep(3 * time.Second)
		s.tick()
		s.wantState(j.ID, models.JobRunning)
		move, err := s.st.SlurmClusterMove(s.ctx, s.pool.ID)
		if err != nil {
			t.Fatalf("the pool's mark: %v", err)
		}
		forgot := time.Now()
		n, err := s.svc.ForgetSlurmJobs(s.ctx, "hpc", "admin:root")
		if err != nil || n != 1 {
			t.Fatalf("forget the pool's jobs: %d, %v", n, err)
		}
		id := s.slurmJobs(j.ID)[0].SlurmJobID
		s.wantState(j.ID, models.JobFailed)
		wantContains(t, "events", s.eventsOf(j.ID), "running -> failed [lost] Slurm job "+id+
			" on cluster gantry, which pool hpc no longer reaches, forgotten by admin:root; charged until "+move.LastSeenAt.UTC().Format(time.DateTime)+
			" UTC, when Gantry last saw that cluster follow it; if it still runs there, Gantry no longer follows, stops or charges it")
		allocs, _ := s.st.AllocationsOfJob(s.ctx, j.ID)
		if len(allocs) != 1 || allocs[0].State != models.AllocEnded || allocs[0].StartedAt == nil || allocs[0].EndedAt == nil ||
			allocs[0].EndedAt.Sub(move.LastSeenAt).Abs() > time.Millisecond || forgot.Sub(*allocs[0].EndedAt) < 3*time.Second {
			t.Errorf("the forgotten run's allocation: %+v, want it ended when the old cluster was last seen, %s, 3s or more before it was forgotten, %s",
				allocs, move.LastSeenAt, forgot)
		}
		s.wantChargedAsAllocated(allocs[0], "the forgotten run, until the old cluster was last seen,")
		s.until("the node to be of cluster elsewhere", func() bool { return models.SlurmClusterOf(*s.node1()) == "elsewhere" })
		if n := s.node1(); n.State != models.NodeReady {
			t.Errorf("the node of the pool's new cluster: %s (%s)", n.State, n.StateReason)
		}
		actions := strings.Join(s.auditActions(), " ")
		wantContains(t, "audit", actions, "pool.slurm_jobs_forgotten", "pool.slurm_cluster_changed")
		if _, err := s.svc.ForgetSlurmJobs(s.ctx, "hpc", "admin:root"); !isField(err, "pool") {
			t.Errorf("forgetting again: %v, want a pool field error", err)
		}
		if _, err := s.svc.ForgetSlurmJobs(s.ctx, "nosuch", "admin:root"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("forgetting the jobs of no pool: %v, want not found", err)
		}
		if got := s.slurmState(id); got != "RUNNING" {
			t.Errorf("the forgotten Slurm job: %q; Gantry does not stop it", got)
		}
		// The forgotten Slurm job ends (here it was on the same Slurm all along): Gantry,
		// no longer following it, takes nothing of it, once sacct has its end.
		events := s.eventsOf(j.ID)
		if out, err := s.slurmCmd("scancel", id).CombinedOutput(); err != nil {
			t.Fatalf("scancel %s: %v: %s", id, err, out)
		}
		s.until("sacct to have the end of Slurm job "+id, func() bool {
			out, _ := s.slurmCmd("sacct", "-X", "-n", "-P", "-j", id, "-o", "State").Output()
			return strings.HasPrefix(strings.TrimSpace(string(out)), "CANCELLED")
		})
		for range 10 { // polls enough to see that end, were the job still followed
			s.tick()
			time.Sleep(200 * time.Millisecond)
		}
		after, _ := s.st.AllocationsOfJob(s.ctx, j.ID)
		if len(after) != 1 || !after[0].EndedAt.Equal(*allocs[0].EndedAt) || s.eventsOf(j.ID) != events {
			t.Errorf("the forgotten job after its Slurm job ended: allocation %+v, was %+v; events %s", after, allocs, s.eventsOf(j.ID))
		}
	})
}

// Output the backend cannot read leaves the job waiting with the reason and is
// retried, without submitting twice; Slurm's refusal fails the job with Slurm's
// words; a partition Slurm does not know takes the pool's nodes down with why.
func TestSlurmBadAnswersAndRefusals(t *testing.T) {
	garble := func(c *dispatch.SlurmConfig) {
		exec := c.Runner
		c.Runner = func(cfg slurm.Config) slurm.Runner { return &garbledSbatch{Runner: exec(cfg)} }
	}
	eachSlurm(t, garble, func(t *testing.T, s *slurmEnv) {
		j := s.submit("once", 1, func(j *models.Job) { j.Command = `["true"]` })
		s.until("the unreadable answer to show on the job", func() bool {
			return strings.Contains(s.job(j.ID).PendingReason, "cannot parse sbatch output")
		})
		wantContains(t, "the waiting job's reason", s.job(j.ID).PendingReason, "waits to be submitted to Slurm partition gpu", "(retrying)")
		s.untilState(j.ID, models.JobSucceeded)
		out, err := s.slurmCmd("squeue", "-h", "-t", "all", "-n", s.installed().SlurmName(j.ID, 1), "-o", "%A").Output()
		if ids := strings.Fields(string(out)); err != nil || len(ids) != 1 || ids[0] != s.slurmJobs(j.ID)[0].SlurmJobID {
			t.Errorf("Slurm jobs of the attempt: %q, %v; want exactly the one Gantry follows", ids, err)
		}

		s.reconfigure(func(c *slurm.Config) { c.QOS = map[string]string{"research": "nosuchqos"} })
		refused := s.submit("refused", 1, func(j *models.Job) { j.Command = `["true"]` })
		done := s.untilState(refused.ID, models.JobFailed)
		wantContains(t, "the refused job's reason", s.eventsOf(refused.ID), "scheduled -> failed [slurm-rejected] attempt 1 cannot run on Slurm partition gpu",
			"rejected by Slurm: Invalid qos specification")
		if done.StateReason != "slurm-rejected" || len(s.slurmJobs(refused.ID)) != 0 {
			t.Errorf("refused job: %s, Slurm jobs %+v", done.StateReason, s.slurmJobs(refused.ID))
		}
		allocs, _ := s.st.AllocationsOfJob(s.ctx, refused.ID)
		if len(allocs) != 1 || allocs[0].State != models.AllocEnded || allocs[0].StartedAt != nil {
			t.Errorf("the refused job's allocation: %+v", allocs)
		}

		s.reconfigure(func(c *slurm.Config) { c.Partition = "nosuchpartition" })
		s.until("the pool's node to go down", func() bool {
			n, _ := s.st.NodeByName(s.ctx, "hpc.node1")
			return n.State == models.NodeDown
		})
		n, _ := s.st.NodeByName(s.ctx, "hpc.node1")
		wantContains(t, "the node's reason", n.StateReason, "Slurm refuses the pool's configuration", "nosuchpartition")
	})
}

// quotingSbatch stands for a site's Slurm whose sbatch quotes the batch script back
// (a job_submit plugin's refusal, a wrapper's odd answer): the first sbatch answers
// with the script's line that exports HF_TOKEN as its output, every later one refuses
// the job quoting that line. Nothing is submitted.
type quotingSbatch struct {
	slurm.Runner
	calls int
}

func (q *quotingSbatch) Run(ctx context.Context, name string, args []string, stdin []byte) ([]byte, error) {
	if name != "sbatch" {
		return q.Runner.Run(ctx, name, args, stdin)
	}
	line := ""
	for _, l := range strings.Split(string(stdin), "\n") {
		if strings.HasPrefix(l, "export HF_TOKEN=") {
			line = l
		}
	}
	q.calls++
	if q.calls == 1 {
		return []byte(line + "\n"), nil
	}
	return nil, &slurm.CommandError{Name: "sbatch", ExitCode: 1, Stderr: "sbatch: error: Batch job submission failed: site policy refuses " + line + "\n"}
}

// Slurm's words on a submission that quote the batch script, which exports the job's
// secrets, are stored with their values masked: the answer it cannot read (the job
// waits, saying why) and the refusal (the job fails with it, audited).
func TestSlurmWordsOnASubmissionAreMasked(t *testing.T) {
	quote := func(c *dispatch.SlurmConfig) {
		exec := c.Runner
		c.Runner = func(cfg slurm.Config) slurm.Runner { return &quotingSbatch{Runner: exec(cfg)} }
	}
	eachSlurm(t, quote, func(t *testing.T, s *slurmEnv) {
		const secret = "hf_sbatch-secret-71"
		j := s.submit("quoted", 1, func(j *models.Job) { j.Command = `["true"]` })
		if err := s.st.SetJobSecretEnv(s.ctx, j.ID, map[string]string{"HF_TOKEN": secret}); err != nil {
			t.Fatal(err)
		}
		s.until("the unreadable answer to show on the job", func() bool {
			return strings.Contains(s.job(j.ID).PendingReason, "cannot parse sbatch output")
		})
		wantContains(t, "the waiting job's reason", s.job(j.ID).PendingReason, `cannot parse sbatch output "export HF_TOKEN='********'"`)
		done := s.untilState(j.ID, models.JobFailed)
		events := s.eventsOf(j.ID)
		wantContains(t, "the refused job's events", events, "[slurm-unreachable]", "[slurm-rejected] attempt 1 cannot run on Slurm partition gpu",
			"rejected by Slurm: site policy refuses export HF_TOKEN='********'")
		audits, err := s.st.AuditEventsAfter(s.ctx, store.AuditFilter{}, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var detail string
		for _, a := range audits {
			if a.Action == "job.slurm_rejected" && a.ObjectID == strconv.FormatInt(j.ID, 10) {
				detail = a.Detail
			}
		}
		wantContains(t, "the job.slurm_rejected audit detail", detail, "site policy refuses export HF_TOKEN='********'")
		for what, text := range map[string]string{"events": events, "audit detail": detail, "state reason": done.StateReason, "pending reason": done.PendingReason} {
			if strings.Contains(text, "sbatch-secret") {
				t.Errorf("the secret value is in the %s: %s", what, text)
			}
		}
	})
}

// A job submitted to the partition outside Gantry shows as such (read-only, with its
// nodes and GPUs), counts in utilisation, and holds its GPUs in the scheduler's
// view: a Gantry job needing them waits in Gantry's queue, in Gantry's order, and
// runs once the other job ends.
func TestSlurmJobsOutsideGantry(t *testing.T) {
	eachSlurm(t, nil, func(t *testing.T, s *slurmEnv) {
		s.tick()
		other := s.foreignJob(t, "--gres=gpu:a100:2 -J theirs", "sleep 300")
		s.until("the job outside Gantry to show", func() bool {
			jobs, err := s.st.SlurmForeignJobs(s.ctx, s.pool.ID)
			return err == nil && len(jobs) == 1 && jobs[0].State == "RUNNING"
		})
		jobs, _ := s.st.SlurmForeignJobs(s.ctx, s.pool.ID)
		if f := jobs[0]; f.SlurmJobID != other || f.Name != "theirs" || f.Nodes != `["hpc.node1"]` || f.GPUs != 2 || f.GPUModel != "A100-80GB" ||
			f.User != "root" || f.StartedAt == nil {
			t.Errorf("the job outside Gantry: %+v", f)
		}
		if c, err := s.st.GPUCapacity(s.ctx); err != nil || c.ForeignMilli != 2000 || c.TotalMilli != 4000 {
			t.Errorf("utilisation %+v, %v; want 2 of 4 GPUs held outside Gantry", c, err)
		}

		j := s.submit("needs-a100s", 2, func(j *models.Job) { j.GPUModel, j.Command = "A100-80GB", `["true"]` })
		for range 5 {
			s.tick()
		}
		if got := s.wantState(j.ID, models.JobQueued); got.PendingReason == "" || len(s.slurmJobs(j.ID)) != 0 {
			t.Errorf("the Gantry job should wait in Gantry's queue, with why: %q, Slurm jobs %+v", got.PendingReason, s.slurmJobs(j.ID))
		}
		if err := s.slurmCmd("scancel", other).Run(); err != nil {
			t.Fatal(err)
		}
		s.untilState(j.ID, models.JobSucceeded)
		s.until("the ended job outside Gantry to leave the view", func() bool {
			jobs, _ := s.st.SlurmForeignJobs(s.ctx, s.pool.ID)
			return len(jobs) == 0
		})
		if c, _ := s.st.GPUCapacity(s.ctx); c.ForeignMilli != 0 {
			t.Errorf("utilisation after it ended: %+v", c)
		}
	})
}

// The scheduler places on a Slurm node only jobs of whole GPUs: a share of a GPU
// waits, saying why, rather than being submitted for Slurm to refuse.
func TestSlurmNodesTakeWholeGPUsOnly(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, realScheduler(t))
		pool := &models.NodePool{Name: "hpc", Provider: "slurm", CapacityType: models.CapacityOwned}
		if err := st.CreateNodePool(e.ctx, pool); err != nil {
			t.Fatal(err)
		}
		node, devs := slurm.GantryNode("hpc", slurm.Config{Partition: "gpu", GRESTypes: map[string]string{"A100-80GB": "a100"}},
			slurm.Node{Name: "node1", State: "idle", CPUs: 8, MemoryMiB: 8192, GPUs: []slurm.GRES{{Type: "a100", Count: 2}}})
		if _, err := st.SyncPoolNodes(e.ctx, pool.ID, []store.PoolNode{{Node: node, Devices: devs}}, "gone"); err != nil {
			t.Fatal(err)
		}
		share := e.submit("share", 1, func(j *models.Job) { j.GPUMilli, j.GPUMemoryMiB = 500, 10000 })
		whole := e.submit("whole", 1)
		e.svc.Tick(e.ctx)
		e.wantState(whole.ID, models.JobScheduled)
		if got := e.wantState(share.ID, models.JobQueued); !strings.Contains(got.PendingReason, "GPUs only whole (Slurm nodes)") {
			t.Errorf("the share's reason: %q", got.PendingReason)
		}
	})
}

// node1 of the test Slurm is in partitions gpu and debug: with a pool on each, it is
// a Gantry node in both, its GPUs counted once, though the pools read two slurm.conf
// files: Slurm's ClusterName, not a path, says which cluster a node is of. A job wanting both its a100s waits in
// Gantry's queue, submitted nowhere, while another runs there, and runs after.
func TestSlurmNodeInTwoPartitions(t *testing.T) {
	eachSlurm(t, nil, func(t *testing.T, s *slurmEnv) {
		cfg := s.cfg
		cfg.Partition = "debug"
		// The second pool reaches the cluster by another slurm.conf path.
		cfg.SlurmConf = filepath.Join(t.TempDir(), "slurm.conf")
		s.writeConf(cfg.SlurmConf, false)
		raw, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.st.CreateNodePool(s.ctx, &models.NodePool{Name: "dbg", Provider: "slurm", CapacityType: models.CapacityOwned, ProviderConfig: string(raw)}); err != nil {
			t.Fatal(err)
		}
		s.tick()
		for _, name := range []string{"hpc.node1", "dbg.node1"} {
			n, err := s.st.NodeByName(s.ctx, name)
			if err != nil || n.State != models.NodeReady || models.SlurmClusterOf(*n) != "gantry" {
				t.Fatalf("node %s: %+v, %v", name, n, err)
			}
		}
		if c, err := s.st.GPUCapacity(s.ctx); err != nil || c.TotalMilli != 4000 {
			t.Errorf("capacity %+v, %v; want node1's 4 GPUs once", c, err)
		}
		first := s.submit("first", 2, func(j *models.Job) { j.GPUModel, j.Command = "A100-80GB", `["sleep","3"]` })
		second := s.submit("second", 2, func(j *models.Job) { j.GPUModel, j.Command = "A100-80GB", `["true"]` })
		s.untilState(first.ID, models.JobRunning)
		if got := s.wantState(second.ID, models.JobQueued); len(s.slurmJobs(second.ID)) != 0 || got.PendingReason == "" {
			t.Errorf("the second job should wait in Gantry's queue, with why: %q, Slurm jobs %+v", got.PendingReason, s.slurmJobs(second.ID))
		}
		s.untilState(second.ID, models.JobSucceeded)
		s.wantState(first.ID, models.JobSucceeded)
	})
}

// slurmNodeInPools makes the Slurm node node1 (2 a100 GPUs, 8 CPUs) of one cluster
// a Gantry node in each of the pools, as a node in their partitions is.
func slurmNodeInPools(t *testing.T, e *env, names ...string) []*models.NodePool {
	t.Helper()
	var out []*models.NodePool
	for _, name := range names {
		pool := &models.NodePool{Name: name, Provider: "slurm", CapacityType: models.CapacityOwned}
		if err := e.st.CreateNodePool(e.ctx, pool); err != nil {
			t.Fatal(err)
		}
		cfg := slurm.Config{Partition: "part-" + name, SlurmConf: "/etc/slurm/slurm.conf", GRESTypes: map[string]string{"A100-80GB": "a100"}}
		node, devs := slurm.GantryNode(name, cfg, slurm.Node{Cluster: "gantry", Name: "node1", Partitions: []string{"part-" + name}, State: "idle", CPUs: 8, MemoryMiB: 8192,
			GPUs: []slurm.GRES{{Type: "a100", Count: 2}}})
		if _, err := e.st.SyncPoolNodes(e.ctx, pool.ID, []store.PoolNode{{Node: node, Devices: devs}}, "gone"); err != nil {
			t.Fatal(err)
		}
		out = append(out, pool)
	}
	return out
}

// A Slurm node in the partitions of two pools is a Gantry node in each, but its GPUs
// count once: in the fleet's capacity, and in what the scheduler may place, so that
// of three jobs each wanting both its GPUs one is placed, on either pool, and the
// others wait, in the pass that placed it (the scheduler sees two nodes) and after.
func TestSlurmNodeInTwoPoolsCountsOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, realScheduler(t))
		slurmNodeInPools(t, e, "hpc", "debug")
		if c, err := st.GPUCapacity(e.ctx); err != nil || c.TotalMilli != 2000 {
			t.Fatalf("capacity %+v, %v; want the node's 2 GPUs once", c, err)
		}
		var jobs []*models.Job
		for _, name := range []string{"a", "b", "c"} {
			jobs = append(jobs, e.submit(name, 2, func(j *models.Job) { j.GPUModel = "A100-80GB" }))
		}
		for pass := 1; pass <= 2; pass++ {
			e.svc.Tick(e.ctx)
			placed := 0
			for _, j := range jobs {
				switch got := e.job(j.ID); got.State {
				case models.JobScheduled:
					placed++
				case models.JobQueued:
					if pass == 2 && got.PendingReason == "" {
						t.Errorf("job %s waits with no reason: the scheduler should see the node's GPUs taken", got.Name)
					}
				default:
					t.Errorf("job %s is %s", got.Name, got.State)
				}
			}
			if placed != 1 {
				t.Errorf("after pass %d: %d jobs placed on the one Slurm node's 2 GPUs, want 1", pass, placed)
			}
		}
	})
}

// A job outside Gantry on a Slurm node in the partitions of two pools, seen through
// one pool's partition, holds the node's GPUs for the other pool too.
func TestSlurmNodeInTwoPoolsHeldOutsideGantry(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, realScheduler(t))
		pools := slurmNodeInPools(t, e, "hpc", "debug")
		now := time.Now().UTC()
		other := []models.SlurmForeignJob{{SlurmJobID: "41", Name: "theirs", User: "bob", State: "RUNNING", Nodes: `["debug.node1"]`,
			GPUs: 2, GPUModel: "A100-80GB", CPUs: 1, MemoryMiB: 100, SubmittedAt: now, StartedAt: &now}}
		if err := st.SyncForeignJobs(e.ctx, pools[1].ID, other); err != nil {
			t.Fatal(err)
		}
		j := e.submit("waits", 1, func(j *models.Job) { j.GPUModel = "A100-80GB" })
		e.svc.Tick(e.ctx)
		if got := e.wantState(j.ID, models.JobQueued); got.PendingReason == "" {
			t.Error("the job waits with no reason")
		}
	})
}
