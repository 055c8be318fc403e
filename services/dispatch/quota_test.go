package dispatch_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A team's quota reaches the scheduler through the snapshot: the job beyond it waits,
// saying so, and a raised quota lets it start at the next pass.
func TestQuotasReachTheScheduler(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, realScheduler(t))
		e.join("gpu-a", "2xA100-80GB")
		quota := &models.Quota{TeamID: e.proj.TeamID, QuotaLimits: models.QuotaLimits{NominalMilli: 1000}}
		if err := st.SaveQuota(e.ctx, quota); err != nil {
			t.Fatal(err)
		}
		first := e.submit("first", 1)
		second := e.submit("second", 1)
		e.svc.Tick(e.ctx)
		e.wantState(first.ID, models.JobScheduled)
		waiting := e.wantState(second.ID, models.JobQueued)
		if !strings.Contains(waiting.PendingReason, "refused by quota (team vision's GPU quota for any model is exhausted: 1/1 GPUs)") {
			t.Fatalf("the job beyond the quota waits because %q", waiting.PendingReason)
		}
		quota.NominalMilli = 2000
		if err := st.SaveQuota(e.ctx, quota); err != nil {
			t.Fatal(err)
		}
		e.svc.Tick(e.ctx)
		e.wantState(second.ID, models.JobScheduled)
	})
}

// CPU and memory quotas reach the scheduler with their limits: jobs beyond the cores
// wait naming the CPU quota, then the memory quota once the cores are raised, and a
// raised memory quota lets them start.
func TestCPUAndMemoryQuotasReachTheScheduler(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, realScheduler(t))
		e.join("gpu-a", "2xA100-80GB")
		noBorrowing := int64(0)
		quota := &models.Quota{TeamID: e.proj.TeamID, QuotaLimits: models.QuotaLimits{NominalMilli: 2000, CPUMilli: 4000, MemoryMiB: 8192, CPUBorrowingLimitMilli: &noBorrowing, MemoryBorrowingLimitMiB: &noBorrowing}}
		if err := st.SaveQuota(e.ctx, quota); err != nil {
			t.Fatal(err)
		}
		cpuJob := func(name string) *models.Job {
			return e.submit(name, 0, func(j *models.Job) { j.CPUMilli, j.MemoryMiB = 2000, 4096 })
		}
		first, second, third := cpuJob("first"), cpuJob("second"), cpuJob("third")
		e.svc.Tick(e.ctx)
		e.wantState(first.ID, models.JobScheduled)
		e.wantState(second.ID, models.JobScheduled)
		if waiting := e.wantState(third.ID, models.JobQueued); !strings.Contains(waiting.PendingReason, "team vision's CPU quota is exhausted: 4/4 cores") {
			t.Fatalf("the job beyond the CPU quota waits because %q", waiting.PendingReason)
		}
		quota.CPUMilli = 6000
		if err := st.SaveQuota(e.ctx, quota); err != nil {
			t.Fatal(err)
		}
		e.svc.Tick(e.ctx)
		if waiting := e.wantState(third.ID, models.JobQueued); !strings.Contains(waiting.PendingReason, "team vision's memory quota is exhausted: 8/8 GiB") {
			t.Fatalf("the job beyond the memory quota waits because %q", waiting.PendingReason)
		}
		quota.MemoryMiB = 12288
		if err := st.SaveQuota(e.ctx, quota); err != nil {
			t.Fatal(err)
		}
		e.svc.Tick(e.ctx)
		e.wantState(third.ID, models.JobScheduled)
	})
}

// The teams' past use reaches fair share: of two jobs that wait equally long, the one of
// the team that used less starts first, though it was submitted later.
func TestUsageHistoryReachesFairShare(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, realScheduler(t))
		n := e.join("gpu-1", "1xL4-24GB")
		speech := &models.Team{Name: "speech"}
		if err := st.CreateTeam(e.ctx, speech); err != nil {
			t.Fatal(err)
		}
		asr := &models.Project{TeamID: speech.ID, Name: "asr"}
		if err := st.CreateProject(e.ctx, asr); err != nil {
			t.Fatal(err)
		}
		// Vision ran two GPUs for two days this week.
		now := e.clock.now()
		past := e.submit("past", 2)
		if err := st.TransitionJob(e.ctx, past.ID, store.Transition{From: models.JobQueued, To: models.JobCancelled, Reason: "cancelled", Actor: "test"}); err != nil {
			t.Fatal(err)
		}
		started, ended := now.Add(-72*time.Hour), now.Add(-24*time.Hour)
		if err := st.CreateAllocations(e.ctx, []models.Allocation{{JobID: past.ID, Attempt: 1, NodeID: n.ID, Devices: "[]", GPUMilli: 2000,
			CPUMilli: 1000, MemoryMiB: 1024, State: models.AllocEnded, StartedAt: &started, EndedAt: &ended}}); err != nil {
			t.Fatal(err)
		}
		older := e.submit("vision-job", 1, func(j *models.Job) { j.SubmittedAt = now.Add(-time.Minute) })
		younger := e.submit("speech-job", 1, func(j *models.Job) { j.ProjectID = asr.ID; j.SubmittedAt = now })
		e.svc.Tick(e.ctx)
		e.wantState(younger.ID, models.JobScheduled)
		e.wantState(older.ID, models.JobQueued)
	})
}
