package dispatch_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A preview says where a job would start now, or why it would wait, over the same
// snapshot a pass takes, and changes nothing.
func TestPreview(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, realScheduler(t))
		ask := func(gpus int, mutate ...func(*models.Job)) models.Job {
			j := models.Job{Name: "what-if", ProjectID: e.proj.ID, UserID: e.user.ID, Command: `["python"]`, PriorityClass: "research",
				GPUs: gpus, CPUMilli: 1000, MemoryMiB: 1024, Replicas: 1}
			for _, m := range mutate {
				m(&j)
			}
			return j
		}
		p, err := e.svc.Preview(e.ctx, ask(1))
		if err != nil {
			t.Fatal(err)
		}
		if p.Placed || p.Reason != "the cluster has no nodes" || p.Nodes != 0 {
			t.Fatalf("preview on an empty cluster = %+v", p)
		}
		e.join("gpu-a", "2xA100-80GB")
		e.join("gpu-l", "1xL4-24GB")
		p, err = e.svc.Preview(e.ctx, ask(2))
		if err != nil {
			t.Fatal(err)
		}
		if !p.Placed || p.Where != "node gpu-a: 2 × A100-80GB" || len(p.GPUModels) != 1 || p.GPUModels[0] != "A100-80GB" || p.Queued != 0 || p.Nodes != 2 {
			t.Fatalf("preview of 2 GPUs = %+v", p)
		}
		if len(p.Fleet) != 2 || p.Fleet[0].Model != "A100-80GB" || p.Fleet[0].MemoryMiB != 81920 || p.Fleet[1].Model != "L4-24GB" {
			t.Fatalf("fleet = %+v", p.Fleet)
		}
		p, err = e.svc.Preview(e.ctx, ask(1, func(j *models.Job) { j.GPUMilli = 250; j.GPUModel = "L4-24GB" }))
		if err != nil {
			t.Fatal(err)
		}
		if !p.Placed || p.Where != "node gpu-l: 0.25 of one L4-24GB" {
			t.Fatalf("preview of a share = %+v", p)
		}
		// Two whole A100s held by a queued job that the next pass places first: a third waits.
		busy := e.submit("busy", 2, func(j *models.Job) { j.GPUModel = "A100-80GB" })
		e.clock.advance(time.Minute) // the job asked about comes after it
		p, err = e.svc.Preview(e.ctx, ask(1, func(j *models.Job) { j.GPUModel = "A100-80GB" }))
		if err != nil {
			t.Fatal(err)
		}
		if p.Placed || p.Queued != 1 || !strings.Contains(p.Reason, "no node has room") {
			t.Fatalf("preview behind a queued job = %+v", p)
		}
		if j := e.wantState(busy.ID, models.JobQueued); j.PendingReason != "" || j.Attempt != 0 {
			t.Fatalf("a preview changed the queued job: %+v", j)
		}
		if n, err := st.JobCountsByState(e.ctx); err != nil || n[models.JobQueued] != 1 || n[models.JobScheduled] != 0 {
			t.Fatalf("jobs after previews = %v, %v: a preview stores nothing", n, err)
		}
	})
}
