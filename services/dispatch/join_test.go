package dispatch_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func TestJoinAuthenticateAndRevoke(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "2xA100-80GB")
		if n.State != models.NodeReady || !n.Simulated || n.CPUMilli != 8000 || n.CredentialHash == n.credential {
			t.Fatalf("joined node = %+v", n.Node)
		}
		devs, _ := st.DevicesOfNode(e.ctx, n.ID)
		if len(devs) != 2 || devs[0].Model != "A100-80GB" || devs[1].NVLinkPeers != "[0]" {
			t.Fatalf("devices = %+v", devs)
		}
		for _, bad := range []string{"", "gnc_wrong", n.credential + "x"} {
			if _, err := e.svc.Authenticate(e.ctx, bad); !errors.Is(err, dispatch.ErrUnauthorized) {
				t.Errorf("credential %q: %v, want ErrUnauthorized", bad, err)
			}
		}

		token, _, err := dispatch.CreateJoinToken(e.ctx, st, e.audit, e.clock.now(), dispatch.JoinTokenSpec{Name: "once", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		req := agentapi.JoinRequest{JoinToken: token, Name: "gpu-2", Runtime: agentapi.RuntimeProcess}
		if _, err := e.svc.Join(e.ctx, req); err != nil {
			t.Fatal(err)
		}
		req.Name = "gpu-3"
		if _, err := e.svc.Join(e.ctx, req); !errors.Is(err, dispatch.ErrUnauthorized) {
			t.Fatalf("second join with a single-use token: %v, want ErrUnauthorized", err)
		}
		expiring, _, _ := dispatch.CreateJoinToken(e.ctx, st, e.audit, e.clock.now(), dispatch.JoinTokenSpec{Name: "short", TTL: time.Minute, Reusable: true})
		e.clock.advance(2 * time.Minute)
		req.JoinToken = expiring
		if _, err := e.svc.Join(e.ctx, req); !errors.Is(err, dispatch.ErrUnauthorized) {
			t.Fatalf("join with an expired token: %v, want ErrUnauthorized", err)
		}
		if _, err := st.NodeByName(e.ctx, "gpu-3"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused join must register nothing: %v", err)
		}
		req.JoinToken, req.Runtime = "whatever", "lxc"
		var fe *models.FieldError
		if _, err := e.svc.Join(e.ctx, req); !errors.As(err, &fe) || fe.Field != "runtime" {
			t.Fatalf("join with a bad runtime: %v, want a FieldError on runtime", err)
		}

		if err := dispatch.RevokeNodeCredential(e.ctx, st, e.audit, "gpu-1"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Authenticate(e.ctx, n.credential); !errors.Is(err, dispatch.ErrUnauthorized) {
			t.Fatalf("revoked credential: %v, want ErrUnauthorized", err)
		}
		actions := e.auditActions()
		for _, want := range []string{"join_token.created", "node.joined", "agent.refused", "node.join_refused", "node.credential_revoked"} {
			if !slices.Contains(actions, want) {
				t.Errorf("audit log lacks %s: %v", want, actions)
			}
		}
	})
}

// A node that joins again (its data dir was lost) gets a new credential; the old
// one is refused, and what ran under it ends as lost.
func TestRejoinEndsTheOldRegistration(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		old := e.join("gpu-1", "1xL4-24GB")
		j := e.submit("train", 1, func(j *models.Job) { j.MaxRetries = 1 })
		e.svc.Tick(e.ctx)
		e.mustReport(old, agentapi.AttemptRef{JobID: j.ID, Attempt: 1}, agentapi.EventStarted, nil)
		again := e.join("gpu-1", "1xL4-24GB")
		if again.ID != old.ID {
			t.Fatalf("rejoin made a new node %d, want %d", again.ID, old.ID)
		}
		if _, err := e.svc.Authenticate(e.ctx, old.credential); !errors.Is(err, dispatch.ErrUnauthorized) {
			t.Fatalf("old credential after rejoin: %v", err)
		}
		got := e.wantState(j.ID, models.JobQueued)
		if got.Retries != 1 || got.StateReason != "node-rejoined" {
			t.Fatalf("job after rejoin = retries %d reason %q", got.Retries, got.StateReason)
		}
		if !slices.Contains(e.auditActions(), "node.rejoined") {
			t.Error("rejoin not audited")
		}
	})
}

// A GPU reported with MIG instances is in MIG mode, whatever mode the inventory says:
// the reads of instances (a scheduling pass, the cluster page) ask for those of GPUs in
// MIG mode only, and must not lose them.
func TestJoinTakesAGPUWithInstancesAsInMIGMode(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	e := newEnv(t, st, dispatchtest.FirstFit{})
	token, _, err := dispatch.CreateJoinToken(e.ctx, st, e.audit, e.clock.now(), dispatch.JoinTokenSpec{Name: "mig", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	inv := gpu.Inventory{DriverVersion: "550.54.15", Devices: []gpu.Device{
		{Index: 0, UUID: "GPU-0", Model: "A100-80GB", MemoryMiB: 81920, MIG: gpu.MIGDisabled,
			MIGInstances: []gpu.MIGInstance{{UUID: "MIG-0a", Profile: "3g.40gb", MemoryMiB: 40192}}},
		{Index: 1, UUID: "GPU-1", Model: "A100-80GB", MemoryMiB: 81920, MIG: gpu.MIGDisabled},
	}}
	res, err := e.svc.Join(e.ctx, agentapi.JoinRequest{JoinToken: token, Name: "gpu-mig", Runtime: agentapi.RuntimeProcess, Inventory: inv})
	if err != nil {
		t.Fatal(err)
	}
	devs, err := st.DevicesOfNode(e.ctx, res.NodeID)
	if err != nil || len(devs) != 2 || !devs[0].MIGEnabled || devs[1].MIGEnabled {
		t.Fatalf("devices = %+v %v, want GPU 0 alone in MIG mode", devs, err)
	}
}

// The passes keep the fleet's GPUs between them, and see each change of them: a node
// created with its GPUs (a Slurm node), GPUs that a node reports anew, a GPU gone.
func TestSnapshotSeesEveryChangeOfTheGPUs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		// A pass reads the nodes only when something waits.
		if err := st.CreateJob(e.ctx, &models.Job{Name: "waits", ProjectID: e.proj.ID, UserID: e.user.ID, Command: `["true"]`,
			PriorityClass: "research", GPUs: 8}, "user:ada"); err != nil {
			t.Fatal(err)
		}
		gpusOf := func(name string) []string {
			t.Helper()
			snap, err := e.svc.Snapshot(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range snap.Nodes {
				if n.Name == name {
					var out []string
					for _, g := range n.GPUs {
						out = append(out, g.UUID+"/"+g.Model)
					}
					return out
				}
			}
			t.Fatalf("no node %s in the snapshot", name)
			return nil
		}
		e.join("gpu-1", "1xA100-80GB")
		if got := gpusOf("gpu-1"); len(got) != 1 {
			t.Fatalf("a node joined: %v", got)
		}
		n := &models.Node{Name: "slurm-1", State: models.NodeReady, Runtime: "process", Labels: "{}"}
		if err := st.CreateNode(e.ctx, n, []models.GPUDevice{{Index: 0, UUID: "GPU-s0", Model: "A100-80GB", MemoryMiB: 81920, Healthy: true}}); err != nil {
			t.Fatal(err)
		}
		if got := gpusOf("slurm-1"); !slices.Equal(got, []string{"GPU-s0/A100-80GB"}) {
			t.Fatalf("after the node was created: %v", got)
		}
		if err := st.ReplaceNodeDevices(e.ctx, n.ID, []store.NodeDevice{
			{GPUDevice: models.GPUDevice{Index: 0, UUID: "GPU-s0", Model: "A100-80GB", MemoryMiB: 81920, Healthy: true}},
			{GPUDevice: models.GPUDevice{Index: 1, UUID: "GPU-s1", Model: "H100-80GB", MemoryMiB: 81559, Healthy: true}},
		}); err != nil {
			t.Fatal(err)
		}
		if got := gpusOf("slurm-1"); !slices.Equal(got, []string{"GPU-s0/A100-80GB", "GPU-s1/H100-80GB"}) {
			t.Fatalf("after a GPU was added: %v", got)
		}
		if err := st.ReplaceNodeDevices(e.ctx, n.ID, nil); err != nil {
			t.Fatal(err)
		}
		if got := gpusOf("slurm-1"); len(got) != 0 {
			t.Fatalf("after the GPUs went: %v", got)
		}
	})
}
