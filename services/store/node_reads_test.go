package store_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// The node lists (Nodes, NodesWithRemoved, NodesInStates) read each node as NodeByName
// does, every field, NULLs included, in a transaction too.
func TestNodeListsReadAsTheGetter(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		pool := &models.NodePool{Name: "train", Provider: "static", CapacityType: models.CapacityOwned}
		if err := s.CreateNodePool(ctx, pool); err != nil {
			t.Fatal(err)
		}
		// Values differ from each other where columns share a type, so that two swapped read wrong.
		deadline, beat, removed := time.Date(2026, 3, 2, 9, 0, 0, 123456000, time.UTC), time.Date(2026, 3, 2, 9, 1, 0, 0, time.UTC),
			time.Date(2026, 3, 2, 9, 2, 0, 0, time.UTC)
		full := &models.Node{Name: "b-full", PoolID: &pool.ID, State: models.NodeDraining, StateReason: "maintenance", DrainDeadline: &deadline,
			Labels: `{"rack":"r1"}`, CPUMilli: 96000, MemoryMiB: 1 << 20, ScratchMiB: 4096, DriverVersion: "550.54.15", CUDAVersion: "12.4",
			Runtime: "docker", Simulated: true, Confidential: true, CCState: "on", AgentVersion: "v1.2.3", CredentialHash: "hash",
			LastHeartbeatAt: &beat}
		bare := &models.Node{Name: "a-bare", State: models.NodeReady}
		gone := &models.Node{Name: "c-gone", State: models.NodeDown, RemovedAt: &removed}
		for _, n := range []*models.Node{full, bare, gone} {
			if err := s.CreateNode(ctx, n, nil); err != nil {
				t.Fatal(err)
			}
		}
		want := map[string]*models.Node{}
		for _, name := range []string{"a-bare", "b-full", "c-gone"} {
			n, err := s.NodeByName(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			want[name] = n
		}
		check := func(what string, got []models.Node, err error, names ...string) {
			t.Helper()
			if err != nil || len(got) != len(names) {
				t.Errorf("%s: %d nodes, %v; want %v", what, len(got), err, names)
				return
			}
			for i, name := range names {
				if !reflect.DeepEqual(&got[i], want[name]) {
					t.Errorf("%s: node %d\n %+v\nwant\n %+v", what, i, got[i], *want[name])
				}
			}
		}
		for _, tx := range []bool{false, true} {
			read := func(s *store.Store) error {
				nodes, err := s.Nodes(ctx)
				check("Nodes", nodes, err, "a-bare", "b-full")
				nodes, err = s.NodesWithRemoved(ctx)
				check("NodesWithRemoved", nodes, err, "a-bare", "b-full", "c-gone")
				nodes, err = s.NodesInStates(ctx, []string{models.NodeDown, models.NodeDraining})
				check("NodesInStates", nodes, err, "b-full", "c-gone")
				return nil
			}
			if !tx {
				_ = read(s)
			} else if err := s.InTx(ctx, read); err != nil {
				t.Fatal(err)
			}
		}
		if n := reflect.TypeFor[models.Node]().NumField(); n != len(store.NodeColumns) {
			t.Errorf("a node has %d fields; the lists read %d columns", n, len(store.NodeColumns))
		}
	})
}
