package pools_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/pools"
	"github.com/gantry-gpu/gantry/services/store"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is the pools service over a fresh store, real dispatch as its fleet, and a
// fake cloud (this test binary run as the exec provider's script).
type env struct {
	t     *testing.T
	ctx   context.Context
	st    *store.Store
	clock *clock
	audit *audit.Log
	disp  *dispatch.Service
	svc   *pools.Service
	cloud string
}

var poolsConfig = pools.Config{Server: "http://gantry.test", BootTimeout: 10 * time.Minute, ListGrace: time.Minute}

func newEnv(t *testing.T, st *store.Store) *env {
	t.Helper()
	e := &env{t: t, ctx: audit.WithActor(context.Background(), audit.System()), st: st, clock: &clock{t: time.Now().UTC().Truncate(time.Second)}, cloud: t.TempDir()}
	e.audit = audit.New(st, e.clock.now)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var err error
	e.disp, err = dispatch.New(dispatch.Deps{Store: st, Scheduler: dispatchtest.FirstFit{}, Audit: e.audit, Now: e.clock.now, Log: log}, dispatch.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if e.svc, err = pools.New(pools.Deps{Store: st, Audit: e.audit, Fleet: e.disp, Now: e.clock.now, Log: log}, poolsConfig); err != nil {
		t.Fatal(err)
	}
	return e
}

// pool applies an exec pool of 1xL4 nodes whose script is the fake cloud.
func (e *env) pool(name string, mutate ...func(*pools.Spec)) *models.NodePool {
	e.t.Helper()
	s := pools.Spec{Name: name, Provider: pools.ProviderExec, CapacityType: models.CapacitySpot, MaxNodes: 5,
		Template:       pools.Template{GPUModel: "L4-24GB", GPUs: 1, CPUMilli: 8000, MemoryMiB: 32768},
		ProviderConfig: map[string]any{"command": []any{"/usr/bin/env", cloudEnv + "=" + e.cloud, os.Args[0]}, "timeout_sec": 30, "backoff_ms": 10}}
	for _, m := range mutate {
		m(&s)
	}
	p, _, err := pools.Apply(e.ctx, e.st, e.audit, s)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// machines lists the fake cloud's machines by name.
func (e *env) machines() map[string]machine {
	e.t.Helper()
	files, _ := filepath.Glob(filepath.Join(e.cloud, "*.json"))
	out := map[string]machine{}
	for _, f := range files {
		var m machine
		b, err := os.ReadFile(f)
		if err != nil || json.Unmarshal(b, &m) != nil {
			e.t.Fatalf("machine file %s: %v", f, err)
		}
		out[m.Name] = m
	}
	return out
}

// boot joins the machine's agent with the join token it was created with, as its
// boot script would.
func (e *env) boot(m machine) (*models.Node, error) {
	sim, err := gpu.NewSimulated("1xL4-24GB", m.Name, e.clock.now)
	if err != nil {
		e.t.Fatal(err)
	}
	inv, err := sim.Discover(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.disp.Join(e.ctx, agentapi.JoinRequest{JoinToken: m.JoinToken, Name: m.Name, Runtime: agentapi.RuntimeProcess,
		CPUMilli: 8000, MemoryMiB: 32768, ScratchMiB: 10000, Inventory: inv}); err != nil {
		return nil, err
	}
	return e.st.NodeByName(e.ctx, m.Name)
}

func (e *env) instances(p *models.NodePool) map[string]models.PoolInstance {
	e.t.Helper()
	list, err := e.st.PoolInstances(e.ctx, p.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]models.PoolInstance{}
	for _, in := range list {
		out[in.Name] = in
	}
	return out
}

// eventKinds lists the pool's event kinds, oldest first.
func (e *env) eventKinds(p *models.NodePool) []string {
	e.t.Helper()
	evs, err := e.st.PoolEvents(e.ctx, store.PoolEventFilter{PoolID: p.ID})
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[len(evs)-1-i] = ev.Kind
	}
	return out
}

func (e *env) auditCount(action string) int {
	e.t.Helper()
	evs, err := e.st.AuditEventsAfter(e.ctx, store.AuditFilter{}, 0, 10000)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Action == action {
			n++
		}
	}
	return n
}
