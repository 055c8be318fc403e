package pools_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/pools"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func TestApplyPoolCreatesThenUpdatesAudited(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		e := newEnv(t, st)
		p := e.pool("l4-spot")
		up, created, err := pools.Apply(e.ctx, e.st, e.audit, pools.Spec{Name: "l4-spot", Provider: pools.ProviderStatic, CapacityType: models.CapacityOwned,
			MaxNodes: 3, Template: pools.Template{CPUMilli: 1000, MemoryMiB: 1024}})
		if err != nil || created || up.ID != p.ID || up.Provider != pools.ProviderStatic || up.ProviderConfig != "" {
			t.Fatalf("update: %+v created=%v err=%v", up, created, err)
		}
		_, _, err = pools.Apply(e.ctx, e.st, e.audit, pools.Spec{Name: "l4-spot", Provider: "gce", CapacityType: models.CapacityOwned})
		var fe *models.FieldError
		if !errors.As(err, &fe) || fe.Field != "provider" {
			t.Fatalf("unknown provider: %v", err)
		}
		got, _ := e.st.NodePoolByName(e.ctx, "l4-spot")
		if got.Provider != pools.ProviderStatic {
			t.Fatalf("a refused change changed the pool: %+v", got)
		}
		if e.auditCount("pool.created") != 1 || e.auditCount("pool.updated") != 1 {
			t.Fatalf("audit: %d created, %d updated", e.auditCount("pool.created"), e.auditCount("pool.updated"))
		}
	})
}

// The whole life of exec machines: created with join tokens, joined, a machine nobody
// asked for deleted, a request that never joins deleted at the boot timeout, a retired
// node deleted once empty, an interruption reported by the provider reclaimed.
func TestReconcileKeepsProviderAndGantryInStep(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		e := newEnv(t, st)
		p := e.pool("l4-spot")
		insts, err := e.svc.CreateNodes(e.ctx, *p, 2, "2 jobs wait for an L4", nil)
		if err != nil {
			t.Fatal(err)
		}
		ms := e.machines()
		if len(insts) != 2 || len(ms) != 2 || insts[0].ProviderID == "" {
			t.Fatalf("created %+v; cloud has %v", insts, ms)
		}
		joined, slow := ms[insts[0].Name], ms[insts[1].Name]
		n, err := e.boot(joined)
		if err != nil || n.PoolID == nil || *n.PoolID != p.ID {
			t.Fatalf("boot: %+v %v", n, err)
		}
		// A machine someone made by hand in the pool's account: nobody expects it.
		if err := os.WriteFile(filepath.Join(e.cloud, "l4-spot-stray.json"), []byte(`{"pool":"l4-spot","name":"l4-spot-stray","provider_id":"i-stray"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := e.svc.Reconcile(e.ctx, *p)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rep.Joined, []string{joined.Name}) || !slices.Equal(rep.Leaked, []string{"l4-spot-stray"}) || len(rep.TimedOut) != 0 {
			t.Fatalf("first pass %+v", rep)
		}
		if _, ok := e.machines()["l4-spot-stray"]; ok {
			t.Fatal("the stray machine was not deleted")
		}
		if in := e.instances(p)[joined.Name]; in.State != models.InstanceRunning || in.JoinedAt == nil {
			t.Fatalf("joined instance %+v", in)
		}

		e.clock.advance(poolsConfig.BootTimeout)
		rep, err = e.svc.Reconcile(e.ctx, *p)
		if err != nil || !slices.Equal(rep.TimedOut, []string{slow.Name}) {
			t.Fatalf("boot timeout pass %+v, %v", rep, err)
		}
		if _, ok := e.machines()[slow.Name]; ok {
			t.Fatal("the request that never joined still has its machine")
		}
		if in := e.instances(p)[slow.Name]; in.State != models.InstanceFailed || !strings.Contains(in.StateReason, "did not join") {
			t.Fatalf("timed-out instance %+v", in)
		}
		if _, err := e.boot(slow); !errors.Is(err, dispatch.ErrUnauthorized) {
			t.Fatalf("the timed-out request's join token still works: %v", err)
		}

		if err := e.svc.RetireNode(e.ctx, *p, joined.Name, "idle for 10m", 0); err != nil {
			t.Fatal(err)
		}
		if n, _ := st.NodeByName(e.ctx, joined.Name); n.State != models.NodeCordoned {
			t.Fatalf("retired node is %s, want cordoned (the pool does not stop jobs)", n.State)
		}
		rep, err = e.svc.Reconcile(e.ctx, *p)
		if err != nil || !slices.Equal(rep.Deleted, []string{joined.Name}) {
			t.Fatalf("retire pass %+v, %v", rep, err)
		}
		n, _ = st.NodeByName(e.ctx, joined.Name)
		if n.State != models.NodeDown || n.CredentialHash != "" || n.RemovedAt == nil || len(e.machines()) != 0 {
			t.Fatalf("deleted node %+v; cloud %v", n, e.machines())
		}
		want := []string{models.PoolScaleUp, models.PoolReconcile, models.PoolFailed, models.PoolScaleDown, models.PoolDeleted}
		if got := e.eventKinds(p); !slices.Equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
		if e.auditCount("pool.scale-up") != 1 || e.auditCount("pool.deleted") != 1 || e.auditCount("pool.reconcile") != 1 {
			t.Fatal("pool decisions are not all audited")
		}
	})
}

func TestReconcileReclaimsInterruptedMachines(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		e := newEnv(t, st)
		p := e.pool("l4-spot")
		insts, err := e.svc.CreateNodes(e.ctx, *p, 1, "a job waits", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.boot(e.machines()[insts[0].Name]); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.cloud, insts[0].Name+".interrupt"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			rep, err := e.svc.Reconcile(e.ctx, *p)
			if err != nil || !slices.Equal(rep.Reclaimed, []string{insts[0].Name}) {
				t.Fatalf("reclaim pass %+v, %v", rep, err)
			}
		}
		n, _ := st.NodeByName(e.ctx, insts[0].Name)
		if n.State != models.NodeDraining || !strings.Contains(n.StateReason, "spot capacity reclaimed") || n.DrainDeadline == nil {
			t.Fatalf("interrupted node %+v", n)
		}
		if e.auditCount("node.reclaimed") != 1 {
			t.Fatalf("a repeated notice reclaimed the node %d times", e.auditCount("node.reclaimed"))
		}
	})
}

// A provider that cannot create leaves no request waiting and no join token usable.
func TestFailedCreateLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		e := newEnv(t, st)
		p := e.pool("l4-spot", func(s *pools.Spec) {
			s.ProviderConfig = map[string]any{"command": []any{script(t, "echo 'InsufficientInstanceCapacity' >&2; exit 1")}, "retries": 1, "backoff_ms": 10}
		})
		_, err := e.svc.CreateNodes(e.ctx, *p, 2, "jobs wait", nil)
		var pe *pools.ProviderError
		if !errors.As(err, &pe) || pe.Attempts != 2 {
			t.Fatalf("want the provider's failure after 2 attempts, got %v", err)
		}
		for name, in := range e.instances(p) {
			if in.State != models.InstanceFailed || !strings.Contains(in.StateReason, "InsufficientInstanceCapacity") {
				t.Fatalf("instance %s: %+v", name, in)
			}
		}
		toks, _ := st.JoinTokens(e.ctx)
		for _, tok := range toks {
			if tok.RevokedAt == nil {
				t.Fatalf("join token %s of a failed request is still valid", tok.Name)
			}
		}
		if got := e.eventKinds(p); !slices.Equal(got, []string{models.PoolScaleUp, models.PoolFailed}) {
			t.Fatalf("events %v", got)
		}
	})
}
