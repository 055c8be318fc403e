package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/pools"
	"github.com/gantry-gpu/gantry/services/slurm"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A Slurm pool's page shows its partition's nodes as Slurm reports them and the jobs
// there that Gantry did not submit, read-only; without any it says so.
func TestSlurmPoolPageShowsJobsOutsideGantry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		admin := s.signIn("admin", s.password)
		ctx := audit.WithActor(t.Context(), audit.System())
		p, _, err := pools.Apply(ctx, st, audit.New(st, time.Now), pools.Spec{Name: "hpc", Provider: pools.ProviderSlurm, CapacityType: models.CapacityOwned,
			ProviderConfig: map[string]any{"partition": "gpu", "log_dir": "/shared/logs", "checkpoint_dir": "/shared/ckpt"}})
		if err != nil {
			t.Fatal(err)
		}
		res, body := s.send(admin, "GET", "/admin/pools/hpc", "", nil)
		if res.StatusCode != http.StatusOK || !strings.Contains(body, `data-testid="no-foreign-jobs"`) || !strings.Contains(body, "partition gpu") {
			t.Fatalf("Slurm pool page without jobs outside Gantry = %d", res.StatusCode)
		}
		node := store.PoolNode{Node: models.Node{Name: "hpc.node1", State: models.NodeReady, StateReason: "Slurm: mixed", Runtime: models.RuntimeSlurm}}
		if _, err := st.SyncPoolNodes(t.Context(), p.ID, []store.PoolNode{node}, "gone"); err != nil {
			t.Fatal(err)
		}
		start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		jobs := []models.SlurmForeignJob{
			{SlurmJobID: "41", Name: "climate-sim", User: "bob", Account: "physics", QOS: "normal", State: "RUNNING", Nodes: `["hpc.node1"]`,
				GPUs: 2, GPUModel: "A100-80GB", CPUs: 8, SubmittedAt: start, StartedAt: &start},
			{SlurmJobID: "42", Name: "<script>", User: "eve", QOS: "normal", State: "PENDING", Reason: "Resources", Nodes: `[]`, SubmittedAt: start},
		}
		if err := st.SyncForeignJobs(t.Context(), p.ID, jobs); err != nil {
			t.Fatal(err)
		}
		res, body = s.send(admin, "GET", "/admin/pools/hpc", "", nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("Slurm pool page = %d", res.StatusCode)
		}
		for _, want := range []string{`data-slurm-job="41"`, "climate-sim", "bob", "account physics", "2× A100-80GB per node", "running since 2026-12-01 09:00:00",
			`data-slurm-job="42"`, "Resources", "waiting since", "hpc.node1", "Slurm: mixed", "&lt;script&gt;"} {
			if !strings.Contains(body, want) {
				t.Errorf("the Slurm pool page lacks %q", want)
			}
		}
		if strings.Index(body, `data-slurm-job="41"`) > strings.Index(body, `data-slurm-job="42"`) {
			t.Error("running jobs outside Gantry should come first")
		}
	})
}

// The cluster page counts the GPUs that jobs submitted to Slurm outside Gantry hold as
// in use, shows them on their node, and lists those jobs.
func TestClusterPageCountsJobsOutsideGantry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		viewer, _ := s.member("olga")
		pool := &models.NodePool{Name: "hpc", Provider: pools.ProviderSlurm, CapacityType: models.CapacityOwned}
		if err := st.CreateNodePool(t.Context(), pool); err != nil {
			t.Fatal(err)
		}
		node := store.PoolNode{Node: models.Node{Name: "hpc.node1", State: models.NodeReady, StateReason: "Slurm: mixed", Runtime: models.RuntimeSlurm,
			CPUMilli: 8000, MemoryMiB: 8192}}
		for i, m := range []string{"A100-80GB", "A100-80GB", "L4-24GB", "L4-24GB"} {
			node.Devices = append(node.Devices, models.GPUDevice{Index: i, UUID: "slurm:hpc:node1:" + strconv.Itoa(i), Model: m, MemoryMiB: 1024, Healthy: true})
		}
		if _, err := st.SyncPoolNodes(t.Context(), pool.ID, []store.PoolNode{node}, "gone"); err != nil {
			t.Fatal(err)
		}
		start := time.Now().UTC()
		jobs := []models.SlurmForeignJob{{SlurmJobID: "41", Name: "climate-sim", User: "bob", State: "RUNNING", Nodes: `["hpc.node1"]`,
			GPUs: 2, GPUModel: "L4-24GB", SubmittedAt: start, StartedAt: &start}}
		if err := st.SyncForeignJobs(t.Context(), pool.ID, jobs); err != nil {
			t.Fatal(err)
		}
		res, body := s.send(viewer, "GET", "/cluster", "", nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("cluster page = %d", res.StatusCode)
		}
		for _, want := range []string{`data-testid="gpus-used">2<`, `data-testid="gpus-free">2<`, `data-slurm-job="41"`, "climate-sim", "2× L4-24GB per node",
			"Slurm job 41 (outside Gantry)"} {
			if !strings.Contains(body, want) {
				t.Errorf("the cluster page lacks %q", want)
			}
		}
		if n := strings.Count(body, `data-testid="gpu-foreign"`); n != 2 {
			t.Errorf("%d GPUs shown held outside Gantry, want the 2 L4s", n)
		}
	})
}

// A Slurm node in the partitions of two pools shows in both, saying so, with one set
// of GPUs: the cluster page counts them, and what holds them, once.
func TestClusterPageCountsASlurmNodeInTwoPoolsOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		viewer, _ := s.member("olga")
		var created []*models.NodePool
		for _, name := range []string{"hpc", "debug"} {
			pool := &models.NodePool{Name: name, Provider: pools.ProviderSlurm, CapacityType: models.CapacityOwned}
			if err := st.CreateNodePool(t.Context(), pool); err != nil {
				t.Fatal(err)
			}
			cfg := slurm.Config{Partition: name, GRESTypes: map[string]string{"A100-80GB": "a100"}}
			node, devs := slurm.GantryNode(name, cfg, slurm.Node{Cluster: "gantry", Name: "node1", State: "mixed", CPUs: 8, MemoryMiB: 8192,
				GPUs: []slurm.GRES{{Type: "a100", Count: 2}, {Type: "l4", Count: 2}}})
			if _, err := st.SyncPoolNodes(t.Context(), pool.ID, []store.PoolNode{{Node: node, Devices: devs}}, "gone"); err != nil {
				t.Fatal(err)
			}
			created = append(created, pool)
		}
		start := time.Now().UTC()
		jobs := []models.SlurmForeignJob{{SlurmJobID: "41", Name: "climate-sim", User: "bob", State: "RUNNING", Nodes: `["debug.node1"]`,
			GPUs: 2, GPUModel: "l4", SubmittedAt: start, StartedAt: &start}}
		if err := st.SyncForeignJobs(t.Context(), created[1].ID, jobs); err != nil {
			t.Fatal(err)
		}
		res, body := s.send(viewer, "GET", "/cluster", "", nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("cluster page = %d", res.StatusCode)
		}
		for _, want := range []string{`data-testid="gpus">4<`, `data-testid="gpus-used">2<`, `data-testid="gpus-free">2<`, "hpc.node1", "debug.node1",
			"one Slurm node with debug.node1; its GPUs count once", "one Slurm node with hpc.node1; its GPUs count once"} {
			if !strings.Contains(body, want) {
				t.Errorf("the cluster page lacks %q", want)
			}
		}
		if n := strings.Count(body, `data-testid="gpu-foreign"`); n != 4 {
			t.Errorf("%d GPUs shown held outside Gantry, want the 2 L4s on each of the node's pools", n)
		}
	})
}

// movedSlurmPool is a Slurm pool "hpc" as the leader leaves it once its slurm.conf
// leads to another cluster while a job of it runs on cluster gantry: its node down
// saying so, and the job running as Slurm job 12 there.
func movedSlurmPool(t *testing.T, s *site) *models.Job {
	t.Helper()
	st, ctx := s.st, t.Context()
	p, _, err := pools.Apply(audit.WithActor(ctx, audit.System()), st, audit.New(st, time.Now), pools.Spec{Name: "hpc", Provider: pools.ProviderSlurm,
		CapacityType: models.CapacityOwned, ProviderConfig: map[string]any{"partition": "gpu", "log_dir": "/shared/logs", "checkpoint_dir": "/shared/ckpt"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := slurm.Config{Partition: "gpu", GRESTypes: map[string]string{"A100-80GB": "a100"}}
	node, devs := slurm.GantryNode("hpc", cfg, slurm.Node{Cluster: "gantry", Name: "node1", State: "mixed", CPUs: 8, MemoryMiB: 8192,
		GPUs: []slurm.GRES{{Type: "a100", Count: 2}}})
	if _, err := st.SyncPoolNodes(ctx, p.ID, []store.PoolNode{{Node: node, Devices: devs}}, "gone"); err != nil {
		t.Fatal(err)
	}
	n, err := st.NodeByName(ctx, "hpc.node1")
	if err != nil {
		t.Fatal(err)
	}
	reason := "Slurm pool reaches another cluster: /etc/slurm/slurm.conf now reaches Slurm cluster elsewhere, not gantry, where 1 of the pool's jobs are; " +
		"Gantry leaves them alone until the pool reaches gantry again"
	if err := st.SetNodeState(ctx, n.ID, []string{n.State}, models.NodeDown, reason); err != nil {
		t.Fatal(err)
	}
	found := time.Date(2026, 11, 30, 10, 0, 30, 0, time.UTC)
	if err := st.MarkSlurmClusterMove(ctx, &models.SlurmClusterMove{PoolID: p.ID, JobsCluster: "gantry", ConfCluster: "elsewhere", Reason: reason,
		FoundAt: found, LastSeenAt: found.Add(-2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	team := &models.Team{Name: "climate"}
	if err := st.CreateTeam(ctx, team); err != nil {
		t.Fatal(err)
	}
	proj := &models.Project{TeamID: team.ID, Name: "sim"}
	if err := st.CreateProject(ctx, proj); err != nil {
		t.Fatal(err)
	}
	admin, err := st.UserByUsername(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	j := &models.Job{Name: "on-the-old-cluster", ProjectID: proj.ID, UserID: admin.ID, Command: `["sleep","600"]`, Env: "{}", GPUs: 1, CPUMilli: 1000,
		MemoryMiB: 1024, Replicas: 1, PriorityClass: "research"}
	if err := st.CreateJob(ctx, j, "user:admin"); err != nil {
		t.Fatal(err)
	}
	if err := st.TransitionJob(ctx, j.ID, store.Transition{From: models.JobQueued, To: models.JobScheduled, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	start := time.Now().UTC().Add(-time.Hour)
	if err := st.CreateAllocations(ctx, []models.Allocation{{JobID: j.ID, Attempt: 1, NodeID: n.ID, State: models.AllocRunning, StartedAt: &start,
		GPUMilli: 1000, Devices: `[{"uuid":"` + devs[0].UUID + `","milli":1000}]`}}); err != nil {
		t.Fatal(err)
	}
	if err := st.TransitionJob(ctx, j.ID, store.Transition{From: models.JobScheduled, To: models.JobRunning}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSlurmJob(ctx, &models.SlurmJob{PoolID: p.ID, JobID: j.ID, Attempt: 1, CurrentAttempt: 1, SlurmJobID: "12"}); err != nil {
		t.Fatal(err)
	}
	return j
}

// A Slurm pool standing still on a slurm.conf that leads to another cluster says so on
// its page, and offers admins (not auditors) to forget its jobs there; forgetting is
// refused, changing nothing, for a pool that does not stand still or does not exist.
func TestSlurmPoolPageOffersToForgetTheOldClustersJobs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st).site
		admin := s.signIn("admin", s.password)
		auditorUser := &models.User{Username: "audra", Email: "audra@example.com"}
		if err := st.CreateUser(t.Context(), auditorUser); err != nil {
			t.Fatal(err)
		}
		if err := s.az.SetGlobalRoles(t.Context(), auditorUser, false, true); err != nil {
			t.Fatal(err)
		}
		pw, err := s.id.ResetPassword(t.Context(), "audra")
		if err != nil {
			t.Fatal(err)
		}
		auditor := s.signIn("audra", pw)
		if _, _, err := pools.Apply(audit.WithActor(t.Context(), audit.System()), st, audit.New(st, time.Now), pools.Spec{Name: "steady", Provider: pools.ProviderSlurm,
			CapacityType: models.CapacityOwned, ProviderConfig: map[string]any{"partition": "debug", "log_dir": "/shared/logs", "checkpoint_dir": "/shared/ckpt"}}); err != nil {
			t.Fatal(err)
		}
		// A node of steady down with the words of a moved cluster, as an admin may write
		// them: only the leader's mark stops a pool.
		steady, err := st.NodePoolByName(t.Context(), "steady")
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreateNode(t.Context(), &models.Node{Name: "steady.node1", State: models.NodeDown, Runtime: models.RuntimeSlurm, PoolID: &steady.ID,
			StateReason: "Slurm pool reaches another cluster: its slurm.conf now reaches Slurm cluster b, not a"}, nil); err != nil {
			t.Fatal(err)
		}
		j := movedSlurmPool(t, s)

		_, body := s.send(admin, "GET", "/admin/pools/hpc", "", nil)
		for _, want := range []string{`data-testid="slurm-moved"`, "now reaches Slurm cluster elsewhere, not gantry", "back at cluster gantry", "its 1 open Slurm jobs",
			"Gantry last saw its jobs on cluster gantry at 2026-11-30 10:00:28 UTC.",
			`data-testid="forget-slurm-jobs"`, `action="/admin/pools/hpc/forget-slurm-jobs"`} {
			if !strings.Contains(body, want) {
				t.Errorf("the admin's page of the stopped pool lacks %q", want)
			}
		}
		_, body = s.send(auditor, "GET", "/admin/pools/hpc", "", nil)
		if !strings.Contains(body, `data-testid="slurm-moved"`) || strings.Contains(body, `data-testid="forget-slurm-jobs"`) {
			t.Errorf("an auditor sees why the pool stands still, without the button")
		}
		if _, body = s.send(admin, "GET", "/admin/pools/steady", "", nil); strings.Contains(body, `data-testid="slurm-moved"`) {
			t.Errorf("a pool on its jobs' cluster says it stands still")
		}

		token := s.csrf(admin, "/admin/pools/hpc")
		form := func(confirm string) string { return url.Values{"csrf_token": {token}, "confirm": {confirm}}.Encode() }
		res, body := s.send(admin, "POST", "/admin/pools/steady/forget-slurm-jobs", form("yes"), nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Pool steady is not held up by a slurm.conf that leads to another cluster") {
			t.Errorf("forgetting the jobs of a pool on its cluster = %d", res.StatusCode)
		}
		res, _ = s.send(admin, "POST", "/admin/pools/nosuch/forget-slurm-jobs", form("yes"), nil)
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("forgetting the jobs of no pool = %d", res.StatusCode)
		}
		// Without confirm=yes the form asks first.
		res, body = s.send(admin, "POST", "/admin/pools/hpc/forget-slurm-jobs", form(""), nil)
		if res.StatusCode != http.StatusOK || !strings.Contains(body, "Forget the jobs of pool hpc&#39;s old cluster?") {
			t.Errorf("the confirmation = %d", res.StatusCode)
		}
		if got, _ := st.JobByID(t.Context(), j.ID); got.State != models.JobRunning {
			t.Errorf("the job before the confirmation: %s", got.State)
		}
	})
}
