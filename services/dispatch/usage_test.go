package dispatch_test

import (
	"slices"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
	"github.com/gantry-gpu/gantry/services/telemetry/advice"
)

// The CPU a job's processes use, as its agent reports it in heartbeats, is kept per
// replica; with its GPU mostly waiting, it makes the input-bound hint fire. Reports
// of an attempt that is not current on the node are skipped; a bad one is refused.
func TestHeartbeatCPUUseFeedsTheInputBoundHint(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "1xL4-24GB")
		j := e.submit("loader-bound", 1, func(j *models.Job) { j.CPUMilli = 2000 })
		e.svc.Tick(e.ctx)
		ref := agentapi.AttemptRef{JobID: j.ID, Attempt: 1}
		e.mustReport(n, ref, agentapi.EventStarted, nil)
		util, mem := 20, int64(4096)
		for range 13 {
			e.clock.advance(time.Minute)
			sample := gpu.Sample{Time: e.clock.now(), Devices: []gpu.DeviceSample{{UUID: n.gpus[0], UtilizationPct: &util, MemoryUsedMiB: &mem}}}
			res, err := e.svc.Heartbeat(e.ctx, n.Node, agentapi.HeartbeatRequest{Sample: &sample, Jobs: []agentapi.JobUsage{
				{AttemptRef: ref, CPUMilli: 1950},
				{AttemptRef: agentapi.AttemptRef{JobID: j.ID, Attempt: 7}, CPUMilli: 99999}, // not current: skipped
			}})
			if err != nil || res.TelemetryError != "" {
				t.Fatalf("heartbeat = %+v, %v", res, err)
			}
		}
		cpu, err := st.JobMetrics(e.ctx, store.JobMetricFilter{JobID: j.ID, Names: []string{telemetry.MetricCPUMilli}})
		if err != nil || len(cpu) != 13 || cpu[0].Value != 1950 || cpu[12].Value != 1950 {
			t.Fatalf("CPU use stored = %d points (%v), %v; want 13 of 1950", len(cpu), cpu, err)
		}
		hints, err := e.telemetry.JobHints(e.ctx, e.job(j.ID), e.clock.now(), advice.DefaultThresholds())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(hints, func(h advice.Hint) bool { return h.Kind == advice.KindInputBound }) {
			t.Errorf("hints = %+v; want input-bound: the GPU at 20%% while the job used 98%% of its CPU", hints)
		}

		_, err = e.svc.Heartbeat(e.ctx, n.Node, agentapi.HeartbeatRequest{Jobs: []agentapi.JobUsage{{AttemptRef: ref, CPUMilli: -5}}})
		if err == nil {
			t.Error("a negative CPU use was accepted")
		}
	})
}
