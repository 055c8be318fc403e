package governance_test

import (
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// utilMinutes records n 1-minute telemetry rows of job on GPU uuid from start, the
// first idle of them below the idle threshold (2%) and the rest busy (80%).
func (e *env) utilMinutes(job *models.Job, uuid string, start time.Time, n, idle int) {
	e.t.Helper()
	var rows []models.TelemetrySample
	for i := range n {
		util := 80.0
		if i < idle {
			util = 2
		}
		rows = append(rows, models.TelemetrySample{NodeID: e.node.ID, DeviceUUID: uuid, JobID: &job.ID, At: start.Add(time.Duration(i) * time.Minute),
			Resolution: models.ResolutionMinute, UtilPct: util, UtilMinPct: util, UtilMaxPct: util, Samples: 4, Reported: models.ReportedUtil})
	}
	must(e.t, e.s.InsertTelemetry(e.ctx, rows))
}

// rawUtil records raw samples of job every 15 s from start to end: busy (80%) before
// idleFrom, idle (1%) from it on.
func (e *env) rawUtil(job *models.Job, uuid string, start, idleFrom, end time.Time) {
	e.t.Helper()
	var rows []models.TelemetrySample
	for at := start; at.Before(end); at = at.Add(15 * time.Second) {
		util := 80.0
		if !at.Before(idleFrom) {
			util = 1
		}
		rows = append(rows, models.TelemetrySample{NodeID: e.node.ID, DeviceUUID: uuid, JobID: &job.ID, At: at,
			Resolution: models.ResolutionRaw, UtilPct: util, UtilMinPct: util, UtilMaxPct: util, Samples: 1, Reported: models.ReportedUtil})
	}
	must(e.t, e.s.InsertTelemetry(e.ctx, rows))
}

// A project's GPUs idle 41% of the week fire; 40% does not, nor 100% of too little GPU time.
func TestProjectIdleRateFiresAboveThreshold(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{})
		third := &models.Project{TeamID: e.teams["audio"].ID, Name: "tiny"}
		must(t, s.CreateProject(e.ctx, third))
		e.projects["tiny"] = third
		start := tue.Add(-48 * time.Hour)
		e.utilMinutes(e.job("a", "ada", "detect", models.JobQueued), "g0", start, 100, 41)
		e.utilMinutes(e.job("b", "bob", "speech", models.JobQueued), "g1", start, 100, 40)
		e.utilMinutes(e.job("c", "bob", "tiny", models.JobQueued), "g1", start.Add(3*time.Hour), 59, 59)
		rep := e.evaluate(tue)
		if len(rep.Raised) != 1 || rep.Raised[0].Scope != "project" || rep.Raised[0].ScopeID != e.projects["detect"].ID {
			t.Fatalf("raised %+v, want one alert for project detect", rep.Raised)
		}
		ev := evidence(t, rep.Raised[0])
		if ev["idle_pct"] != 41.0 || ev["gpu_minutes"] != 100.0 || ev["threshold_pct"] != 40.0 || ev["idle_below_pct"] != 5.0 ||
			ev["window_from"] != "2026-03-03T12:00:00Z" || ev["window_to"] != "2026-03-10T12:00:00Z" {
			t.Errorf("evidence = %v", ev)
		}
		if rep.Raised[0].Fingerprint[len(rep.Raised[0].Fingerprint)-8:] != "2026-W11" {
			t.Errorf("fingerprint %s: want one alert per ISO week", rep.Raised[0].Fingerprint)
		}
	})
}

// A running job idle for 61 minutes fires the 60-minute rule; one idle for 59 does not.
func TestJobIdleFiresAfterThreshold(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{})
		idle := e.job("idle", "ada", "detect", models.JobRunning)
		busy := e.job("nearly", "bob", "speech", models.JobRunning)
		// The jobs started now (the store stamps it); their telemetry is from an hour later on.
		now := time.Now().UTC().Add(3 * time.Hour).Truncate(time.Minute)
		e.rawUtil(idle, "g0", now.Add(-2*time.Hour), now.Add(-61*time.Minute), now)
		e.rawUtil(busy, "g1", now.Add(-2*time.Hour), now.Add(-59*time.Minute), now)
		rep := e.evaluate(now)
		if len(rep.Raised) != 1 || rep.Raised[0].ScopeID != idle.ID {
			t.Fatalf("raised %+v, want one alert for job %d", rep.Raised, idle.ID)
		}
		ev := evidence(t, rep.Raised[0])
		if ev["idle_minutes"] != 61.0 || ev["threshold_minutes"] != 60.0 || ev["attempt"] != 0.0 {
			t.Errorf("evidence = %v", ev)
		}
		e.rawUtil(idle, "g0", now, now, now.Add(10*time.Minute))
		e.rawUtil(busy, "g1", now, now, now.Add(10*time.Minute))
		if again := e.evaluate(now.Add(10 * time.Minute)); len(again.Raised) != 1 || again.Raised[0].ScopeID != busy.ID {
			t.Errorf("ten minutes later raised %+v, want only the second job, now idle 69 minutes (the first is alerted already)", again.Raised)
		}
	})
}

// The idle cost of a project is each job's GPU charge times its idle share, from known
// charges and telemetry: job a (detect) paid 12.00 for 120 GPU-minutes of which 30 were
// idle (3.00); job b (detect) paid 6.00 without telemetry; job c (speech) paid 6.00 for
// 60 busy minutes.
func TestIdleCostsPriceIdleGPUTime(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, governance.Config{})
		_, err := e.acc.CreateRate(e.ctx, models.CostRate{Resource: models.ResourceGPU, RateMicros: 6_000_000, EffectiveFrom: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
		must(t, err)
		start := tue.Add(-6 * time.Hour)
		alloc := func(j *models.Job, uuid string, from, to time.Time) {
			must(t, s.CreateAllocations(e.ctx, []models.Allocation{{JobID: j.ID, Attempt: 1, NodeID: e.node.ID, Devices: `[{"uuid":"` + uuid + `","milli":1000}]`,
				State: models.AllocEnded, StartedAt: &from, EndedAt: &to}}))
		}
		a := e.job("a", "ada", "detect", models.JobQueued)
		alloc(a, "g0", start, start.Add(2*time.Hour))
		b := e.job("b", "ada", "detect", models.JobQueued)
		alloc(b, "g1", start, start.Add(time.Hour))
		c := e.job("c", "bob", "speech", models.JobQueued)
		alloc(c, "g1", start.Add(time.Hour), start.Add(2*time.Hour))
		_, err = e.acc.Meter(e.ctx, start.Add(3*time.Hour))
		must(t, err)
		e.utilMinutes(a, "g0", start, 120, 30)
		e.utilMinutes(c, "g1", start.Add(time.Hour), 60, 0)
		e.utilMinutes(a, "g0", start.Add(-24*time.Hour), 10, 10) // the day before: outside the period

		day := start.Truncate(24 * time.Hour)
		got, err := e.gov.IdleCosts(e.ctx, day, day.AddDate(0, 0, 1), nil)
		must(t, err)
		want := []governance.IdleCost{
			{ProjectID: e.projects["detect"].ID, Project: "detect", GPUMicros: 18_000_000, MeasuredMicros: 12_000_000, IdleMicros: 3_000_000, GPUMinutes: 120, IdleMinutes: 30},
			{ProjectID: e.projects["speech"].ID, Project: "speech", GPUMicros: 6_000_000, MeasuredMicros: 6_000_000, GPUMinutes: 60},
		}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("idle costs = %+v, want %+v", got, want)
		}
		if pct := got[0].IdlePercent(); pct != 25 {
			t.Errorf("detect idle = %g%%, want 25%%", pct)
		}
		only, err := e.gov.IdleCosts(e.ctx, day, day.AddDate(0, 0, 1), []int64{e.projects["speech"].ID})
		must(t, err)
		if len(only) != 1 || only[0].Project != "speech" {
			t.Errorf("speech's idle cost alone = %+v", only)
		}
	})
}
