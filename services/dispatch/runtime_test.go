package dispatch_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/slurm"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// withImage makes a job name a container image.
func withImage(j *models.Job) { j.ImageRef = "registry.example/lab/train:1" }

// A job that names an image runs on a docker or podman node, a plain command on a
// process node; when only nodes of the other kind are free the job waits and says why.
func TestPlacementFollowsTheNodeRuntime(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, realScheduler(t))
		proc := e.join("proc", "1xL4-24GB")
		box := e.joinRuntime("box", "1xL4-24GB", agentapi.RuntimeDocker)
		pod := e.joinRuntime("pod", "1xL4-24GB", agentapi.RuntimePodman)
		boxed := []*models.Job{e.submit("boxed-1", 1, withImage), e.submit("boxed-2", 1, withImage)}
		plain := e.submit("plain", 1)
		e.svc.Tick(e.ctx)
		for _, j := range append(boxed, plain) {
			e.wantState(j.ID, models.JobScheduled)
		}
		on := map[int64]string{}
		for _, n := range []node{proc, box, pod} {
			for _, l := range e.leases(n).Allocations {
				on[l.JobID] = n.Name
				if wantImage := l.JobID != plain.ID; (l.Image != "") != wantImage {
					t.Errorf("lease of job %d on %s has image %q", l.JobID, n.Name, l.Image)
				}
			}
		}
		if on[plain.ID] != "proc" || on[boxed[0].ID] == "proc" || on[boxed[1].ID] == "proc" || on[boxed[0].ID] == on[boxed[1].ID] {
			t.Fatalf("jobs placed on %v: want the plain job on proc and the images on box and pod", on)
		}

		// The process node is free again, the container nodes are not: another image waits.
		e.mustReport(proc, agentapi.AttemptRef{JobID: plain.ID, Attempt: 1}, agentapi.EventStarted, nil)
		e.mustReport(proc, agentapi.AttemptRef{JobID: plain.ID, Attempt: 1}, agentapi.EventExited, code(0))
		third := e.submit("boxed-3", 1, withImage)
		e.svc.Tick(e.ctx)
		w := e.wantState(third.ID, models.JobQueued)
		if !strings.Contains(w.PendingReason, "1 node runs plain commands only and the job names a container image") {
			t.Errorf("pending reason %q does not name the process node", w.PendingReason)
		}
		if n := len(e.leases(proc).Allocations); n != 0 {
			t.Fatalf("the process node got %d allocations", n)
		}
		e.wantState(e.submit("plain-2", 1).ID, models.JobQueued)
		e.svc.Tick(e.ctx)
		if l := e.leases(proc).Allocations; len(l) != 1 || l[0].Image != "" {
			t.Fatalf("a plain job on the free process node: leases %+v", l)
		}
	})
}

// Submission refuses, on the image field, a job no node's runtime could start, and
// judges the rest against the nodes that could: a container image against docker and
// podman nodes, a plain command against process nodes; a Slurm node starts images only
// when its pool names a container plugin.
func TestCheckFitFollowsTheNodeRuntime(t *testing.T) {
	t.Parallel()
	job := func(gpus int, mutate ...func(*models.Job)) models.Job {
		j := models.Job{Name: "train", GPUs: gpus, CPUMilli: 1000, MemoryMiB: 1024, PriorityClass: "research", Replicas: 1}
		for _, m := range mutate {
			m(&j)
		}
		return j
	}
	type check struct {
		job         models.Job
		field, says string // "" when the job fits
	}
	cases := []struct {
		name   string
		nodes  func(e *env)
		checks []check
	}{
		{"a process node", func(e *env) { e.join("proc", "4xL4-24GB") }, []check{
			{job(1, withImage), "image", "every node runs plain commands only"},
			{job(4), "", ""},
		}},
		{"a process and a podman node", func(e *env) {
			e.join("proc", "4xL4-24GB")
			e.joinRuntime("pod", "2xL4-24GB", agentapi.RuntimePodman)
		}, []check{
			{job(2, withImage), "", ""},
			{job(4, withImage), "resources.gpus", "(2)"}, // the process node's four do not count
			{job(4), "", ""},
		}},
		{"a docker node", func(e *env) { e.joinRuntime("box", "1xL4-24GB", agentapi.RuntimeDocker) }, []check{
			{job(1), "image", "every node runs containers only"},
			{job(1, withImage), "", ""},
		}},
		{"a Slurm node without a container plugin", func(e *env) { e.slurmNode("") }, []check{
			{job(0, withImage), "image", "every node runs plain commands only; use the plain-command image (Slurm pool hpc runs images only through a container plugin, which it does not configure: container: pyxis"},
			{job(0), "", ""},
		}},
		{"a Slurm node with pyxis", func(e *env) { e.slurmNode("pyxis") }, []check{
			{job(0, withImage), "", ""},
			{job(0), "", ""},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.Each(t, func(t *testing.T, st *store.Store) {
				e := newEnv(t, st, realScheduler(t))
				tc.nodes(e)
				for _, c := range tc.checks {
					err := e.svc.CheckFit(e.ctx, c.job, nil)
					var fe *models.FieldError
					switch {
					case c.field == "" && err != nil:
						t.Errorf("job of %d GPUs, image %q: %v; want it to fit", c.job.GPUs, c.job.ImageRef, err)
					case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Message, c.says)):
						t.Errorf("job of %d GPUs, image %q: %v; want refused on %s saying %q", c.job.GPUs, c.job.ImageRef, err, c.field, c.says)
					}
					// The scheduler agrees: what fits an idle cluster would start at once.
					c.job.ProjectID = e.proj.ID
					if pv, err := e.svc.Preview(e.ctx, c.job); err != nil || pv.Placed != (c.field == "") {
						t.Errorf("preview of a job of %d GPUs, image %q: %+v, %v", c.job.GPUs, c.job.ImageRef, pv, err)
					}
				}
			})
		})
	}
}

// slurmNode adds a ready node of a Slurm pool with the container plugin.
func (e *env) slurmNode(container string) {
	e.t.Helper()
	raw, err := json.Marshal(slurm.Config{Partition: "gpu", LogDir: "/shared/logs", CheckpointDir: "/shared/ckpt", Container: container})
	if err != nil {
		e.t.Fatal(err)
	}
	pool := &models.NodePool{Name: "hpc", Provider: "slurm", CapacityType: models.CapacityOwned, ProviderConfig: string(raw)}
	if err := e.st.CreateNodePool(e.ctx, pool); err != nil {
		e.t.Fatal(err)
	}
	pn := store.PoolNode{Node: models.Node{Name: "hpc1", State: models.NodeReady, Runtime: models.RuntimeSlurm, CPUMilli: 8000, MemoryMiB: 8192, Labels: "{}"}}
	if _, err := e.st.SyncPoolNodes(e.ctx, pool.ID, []store.PoolNode{pn}, "gone"); err != nil {
		e.t.Fatal(err)
	}
}
