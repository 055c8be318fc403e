package pools_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/pools"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A job no node, in any state, and no pool's template could ever hold is refused,
// naming the spec's field and the largest offer; an empty cluster refuses nothing.
func TestFitCheck(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		fit := pools.NewFitCheck(st, e.disp)
		job := func(gpus int, model string, memMiB int64) models.Job {
			return models.Job{Name: "train", GPUs: gpus, GPUModel: model, MemoryMiB: memMiB, CPUMilli: 1000, PriorityClass: "research"}
		}
		refused := func(j models.Job, field, says string) {
			t.Helper()
			var fe *models.FieldError
			if err := fit.CheckFit(e.ctx, j); !errors.As(err, &fe) || fe.Field != field || !strings.Contains(fe.Message, says) {
				t.Errorf("job of %d %q GPUs and %d MiB: %v; want refused on %s saying %q", j.GPUs, j.GPUModel, j.MemoryMiB, err, field, says)
			}
		}
		fits := func(j models.Job) {
			t.Helper()
			if err := fit.CheckFit(e.ctx, j); err != nil {
				t.Errorf("job of %d %q GPUs and %d MiB: %v; want it to fit", j.GPUs, j.GPUModel, j.MemoryMiB, err)
			}
		}
		fits(job(8, "", 1<<20)) // no node yet: it waits for the first

		secret, _, err := dispatch.CreateJoinToken(e.ctx, st, e.audit, e.clock.now(), dispatch.JoinTokenSpec{Name: "gpu-1", TTL: time.Hour})
		must(t, err)
		sim, err := gpu.NewSimulated("2xA100-80GB", "gpu-1", e.clock.now)
		must(t, err)
		inv, err := sim.Discover(e.ctx)
		must(t, err)
		_, err = e.disp.Join(e.ctx, agentapi.JoinRequest{JoinToken: secret, Name: "gpu-1", Runtime: agentapi.RuntimeProcess,
			CPUMilli: 16000, MemoryMiB: 65536, ScratchMiB: 10000, Inventory: inv})
		must(t, err)
		n, err := st.NodeByName(e.ctx, "gpu-1")
		must(t, err)
		must(t, st.SetNodeState(e.ctx, n.ID, []string{n.State}, models.NodeCordoned, "maintenance"))

		fits(job(2, "A100-80GB", 65536)) // a cordoned node comes back
		refused(job(4, "", 1024), "resources.gpus", "(2)")
		refused(job(1, "H100-80GB", 1024), "resources.gpu_model", "A100-80GB")
		refused(job(1, "", 2<<20), "resources.memory_mib", "65536 MiB")

		// A spot pool that can create 8×H100 nodes holds what no node does, for jobs that allow spot.
		e.pool("h100", func(s *pools.Spec) {
			s.Template = pools.Template{GPUModel: "H100-80GB", GPUs: 8, CPUMilli: 96000, MemoryMiB: 1 << 20}
		})
		spot := job(8, "H100-80GB", 1<<19)
		refused(spot, "resources.memory_mib", "65536 MiB") // the pool is spot: not for this job
		spot.Spot = true
		fits(spot)
		spot.GPUModel = "A100-80GB"
		refused(spot, "resources.gpus", "(2)")

		// A job that requires NVLink fits only a pool whose template says its cards have it.
		linked := job(8, "H100-80GB", 1<<19)
		linked.Spot, linked.NVLink = true, true
		refused(linked, "resources.nvlink", "joined by NVLink")
		e.pool("h100-sxm", func(s *pools.Spec) {
			s.Template = pools.Template{GPUModel: "H100-80GB", GPUs: 8, NVLink: true, CPUMilli: 96000, MemoryMiB: 1 << 20}
		})
		fits(linked)
	})
}

// An elastic pool with no node yet starts what its template's runtime starts: a
// container image is refused on image when every pool that could hold it runs plain
// processes, and fits once a pool (spot, for a job that allows spot) runs docker.
func TestFitCheckTemplateRuntime(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		fit := pools.NewFitCheck(st, e.disp)
		e.pool("plain", func(s *pools.Spec) {
			s.CapacityType = models.CapacityOnDemand
			s.Template.Runtime = agentapi.RuntimeProcess
		})
		plain := models.Job{Name: "train", GPUs: 1, CPUMilli: 1000, MemoryMiB: 1024, PriorityClass: "research"}
		image := plain
		image.ImageRef = "registry.example.com/team/train:1"
		if err := fit.CheckFit(e.ctx, plain); err != nil {
			t.Errorf("a plain command on a process pool: %v, want it to fit", err)
		}
		var fe *models.FieldError
		if err := fit.CheckFit(e.ctx, image); !errors.As(err, &fe) || fe.Field != "image" {
			t.Errorf("an image on a cluster of process pools: %v, want refused on image", err)
		}
		e.pool("containers", func(s *pools.Spec) { s.Template.Runtime = agentapi.RuntimeDocker })
		if err := fit.CheckFit(e.ctx, image); !errors.As(err, &fe) || fe.Field != "image" {
			t.Errorf("an image, not allowing spot, beside a spot docker pool: %v, want refused on image", err)
		}
		image.Spot = true
		if err := fit.CheckFit(e.ctx, image); err != nil {
			t.Errorf("an image allowing spot beside a spot docker pool: %v, want it to fit", err)
		}
		if err := fit.CheckFit(e.ctx, plain); err != nil {
			t.Errorf("a plain command: %v, want it to fit the process pool still", err)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
