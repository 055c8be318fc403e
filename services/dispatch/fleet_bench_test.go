package dispatch_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/scheduler"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// Size of the fleet of BenchmarkFleetAtScale: more GPUs than a statement takes
// parameters on SQLite (32,766), as a big installation has, half of them busy.
const (
	fleetNodes       = 5_000
	fleetGPUsPerNode = 8
	fleetQueued      = 1_000
	// fleetRunning jobs of two GPUs each run on the first half of the nodes, each its
	// fleetAttempts-th attempt: the earlier ones ended, as the allocations table keeps
	// them.
	fleetRunning  = 10_000
	fleetAttempts = 11
)

// BenchmarkFleetAtScale reads what a scheduling pass reads (Snapshot: on a steady
// fleet, and after a node reported another inventory) and answers the submit form's
// preview (Snapshot, then the production scheduler's plan with the job queued last),
// on a fleet of 5,000 eight-GPU nodes in two pools with 10,000 jobs running (each after
// ten attempts that ended) and 1,000 queued, on SQLite and PostgreSQL. docs/scheduler-benchmarks.md has the figures.
func BenchmarkFleetAtScale(b *testing.B) {
	for _, backend := range storetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			ctx := context.Background()
			cfg := backend.Config(b)
			st := storetest.Open(b, cfg)
			sched, err := scheduler.New(scheduler.DefaultConfig())
			if err != nil {
				b.Fatal(err)
			}
			svc, err := dispatch.New(dispatch.Deps{Store: st, Scheduler: dispatch.NewPlacer(sched), Audit: audit.New(st, time.Now), Now: time.Now,
				Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, dispatch.DefaultConfig())
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			user := &models.User{Username: "ada"}
			if err := st.CreateUser(ctx, user); err != nil {
				b.Fatal(err)
			}
			team := &models.Team{Name: "vision"}
			if err := st.CreateTeam(ctx, team); err != nil {
				b.Fatal(err)
			}
			proj := &models.Project{TeamID: team.ID, Name: "detect"}
			if err := st.CreateProject(ctx, proj); err != nil {
				b.Fatal(err)
			}
			var pools []*models.NodePool
			for _, name := range []string{"train", "infer"} {
				p := &models.NodePool{Name: name, Provider: "static", CapacityType: models.CapacityOwned}
				if err := st.CreateNodePool(ctx, p); err != nil {
					b.Fatal(err)
				}
				pools = append(pools, p)
			}
			now := time.Now().UTC()
			for i := range fleetNodes {
				n := &models.Node{Name: fmt.Sprintf("gpu-%05d", i), State: models.NodeReady, Runtime: "process", CPUMilli: 192_000, MemoryMiB: 2 << 20,
					Labels: "{}", PoolID: &pools[i%2].ID, LastHeartbeatAt: &now}
				devs := make([]models.GPUDevice, fleetGPUsPerNode)
				for g := range devs {
					devs[g] = models.GPUDevice{Index: g, UUID: fmt.Sprintf("GPU-%05d-%d", i, g), Model: "H100-80GB", MemoryMiB: 81559,
						NVLinkPeers: "[]", Healthy: true}
				}
				if err := st.CreateNode(ctx, n, devs); err != nil {
					b.Fatal(err)
				}
			}
			for i := range fleetQueued {
				j := &models.Job{Name: fmt.Sprintf("train-%d", i), ProjectID: proj.ID, UserID: user.ID, Command: `["true"]`,
					PriorityClass: "research", GPUs: 1 + i%8, CPUMilli: 8000, MemoryMiB: 65536}
				if err := st.CreateJob(ctx, j, "user:ada"); err != nil {
					b.Fatal(err)
				}
			}
			seedRunning(b, st, cfg, proj.ID, user.ID)
			b.Logf("seeded %d nodes, %d GPUs, %d running and %d queued jobs in %s", fleetNodes, fleetNodes*fleetGPUsPerNode, fleetRunning, fleetQueued,
				time.Since(start).Round(time.Millisecond))

			b.Run("snapshot", func(b *testing.B) {
				for b.Loop() {
					snap, err := svc.Snapshot(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if len(snap.Nodes) != fleetNodes || len(snap.Queue) != fleetQueued || len(snap.Running) != fleetRunning {
						b.Fatalf("snapshot of %d nodes, %d running and %d queued jobs", len(snap.Nodes), len(snap.Running), len(snap.Queue))
					}
				}
			})
			// A node reports another inventory before each pass (a GPU's health, say):
			// the pass reads the fleet's GPUs again.
			b.Run("snapshot-inventory-changed", func(b *testing.B) {
				n, err := st.NodeByName(ctx, "gpu-00000")
				if err != nil {
					b.Fatal(err)
				}
				devs, err := st.DevicesOfNodes(ctx, []int64{n.ID})
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					nd := make([]store.NodeDevice, len(devs))
					for i, d := range devs {
						d.Healthy = !d.Healthy
						devs[i] = d
						nd[i] = store.NodeDevice{GPUDevice: d}
					}
					if err := st.ReplaceNodeDevices(ctx, n.ID, nd); err != nil {
						b.Fatal(err)
					}
					if _, err := svc.Snapshot(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("preview", func(b *testing.B) {
				job := models.Job{Name: "what-if", ProjectID: proj.ID, UserID: user.ID, Command: `["true"]`, PriorityClass: "research",
					GPUs: 8, CPUMilli: 8000, MemoryMiB: 65536}
				for b.Loop() {
					if _, err := svc.Preview(ctx, job); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// seedRunning starts fleetRunning jobs of two GPUs each, four to a node from the first,
// after fleetAttempts-1 attempts that ended: jobs through the store, their state and
// allocations written behind its back.
func seedRunning(b *testing.B, st *store.Store, cfg store.Config, projectID, userID int64) {
	b.Helper()
	ctx := context.Background()
	nodes, err := st.Nodes(ctx)
	if err != nil {
		b.Fatal(err)
	}
	nodeIDs := map[string]int64{}
	for _, n := range nodes {
		nodeIDs[n.Name] = n.ID
	}
	started := time.Now().UTC().Add(-time.Hour)
	var allocs []models.Allocation
	for i := range fleetRunning {
		j := &models.Job{Name: fmt.Sprintf("run-%d", i), ProjectID: projectID, UserID: userID, Command: `["true"]`,
			PriorityClass: "research", GPUs: 2, CPUMilli: 16000, MemoryMiB: 131072}
		if err := st.CreateJob(ctx, j, "user:ada"); err != nil {
			b.Fatal(err)
		}
		node, first := i/4, i%4*2
		for attempt := 1; attempt <= fleetAttempts; attempt++ {
			a := models.Allocation{JobID: j.ID, Attempt: attempt, NodeID: nodeIDs[fmt.Sprintf("gpu-%05d", node)], GPUMilli: 2000, CPUMilli: 16000,
				MemoryMiB: 131072, State: models.AllocRunning, StartedAt: &started,
				Devices: fmt.Sprintf(`[{"uuid":"GPU-%05d-%d","milli":1000},{"uuid":"GPU-%05d-%d","milli":1000}]`, node, first, node, first+1)}
			if attempt < fleetAttempts {
				a.State, a.StopReason, a.EndedAt = models.AllocEnded, "preempted", &started
			}
			allocs = append(allocs, a)
		}
	}
	for lo := 0; lo < len(allocs); lo += 500 {
		if err := st.CreateAllocations(ctx, allocs[lo:min(lo+500, len(allocs))]); err != nil {
			b.Fatal(err)
		}
	}
	storetest.Exec(b, cfg, fmt.Sprintf("UPDATE jobs SET state = 'running', attempt = %d, started_at = submitted_at WHERE name LIKE 'run-%%'", fleetAttempts))
}
