package telemetry_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// fleet is what a test hangs telemetry on: a node with GPUs, a project and a job.
type fleet struct {
	node    *models.Node
	devices []models.GPUDevice
	project *models.Project
	job     *models.Job
}

// each runs fn on every database backend with a fresh store and its configuration
// (for the raw SQL that sets up what the store has no function for yet), in
// parallel with the package's other tests: every one has databases of its own.
func each(t *testing.T, fn func(t *testing.T, s *store.Store, cfg store.Config)) {
	t.Helper()
	t.Parallel()
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			fn(t, storetest.Open(t, cfg), cfg)
		})
	}
}

// newFleet registers node-1 with the devices of inv (and their MIG slices) and one job.
func newFleet(t *testing.T, s *store.Store, cfg store.Config, inv gpu.Inventory) fleet {
	t.Helper()
	ctx := context.Background()
	u := &models.User{Username: "ada", Email: "ada@example.com"}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	team := &models.Team{Name: "vision"}
	if err := s.CreateTeam(ctx, team); err != nil {
		t.Fatal(err)
	}
	p := &models.Project{TeamID: team.ID, Name: "detect"}
	if err := s.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	j := &models.Job{Name: "train-resnet", ProjectID: p.ID, UserID: u.ID, Command: `["python","train.py"]`, PriorityClass: "research", GPUs: 1}
	if err := s.CreateJob(ctx, j, "user:ada"); err != nil {
		t.Fatal(err)
	}
	n := &models.Node{Name: "node-1", State: "ready", Labels: "{}", Runtime: "process"}
	var devs []models.GPUDevice
	for _, d := range inv.Devices {
		devs = append(devs, models.GPUDevice{Index: d.Index, UUID: d.UUID, Model: d.Model, MemoryMiB: d.MemoryMiB, MIGEnabled: d.MIG == gpu.MIGEnabled, Healthy: true})
	}
	if err := s.CreateNode(ctx, n, devs); err != nil {
		t.Fatal(err)
	}
	saved, err := s.DevicesOfNode(ctx, n.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range inv.Devices {
		for _, mi := range d.MIGInstances {
			storetest.Exec(t, cfg, fmt.Sprintf(
				"INSERT INTO gpu_slices (device_id, uuid, profile, memory_mib, compute_slices, created_at) VALUES (%d, '%s', '%s', %d, 3, CURRENT_TIMESTAMP)",
				saved[d.Index].ID, mi.UUID, mi.Profile, mi.MemoryMiB))
		}
	}
	return fleet{node: n, devices: saved, project: p, job: j}
}

func newService(t *testing.T, s *store.Store, cfg telemetry.Config) *telemetry.Service {
	t.Helper()
	svc, err := telemetry.New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// streamFile is a recorded stream: 500 heartbeats, 15 s apart, of a simulated node
// with two A100-80GB (one busy in waves, one idle then busy) and an A100-40GB in MIG
// mode, with XIDs 13 and 48 on GPU 0. Regenerate with `go test -run TestRecordStream -record`.
const streamFile = "testdata/stream_2h.jsonl"

func readStream(t *testing.T) (gpu.Inventory, []gpu.Sample) {
	t.Helper()
	f, err := os.Open(streamFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var inv gpu.Inventory
	var out []gpu.Sample
	for first := true; sc.Scan(); first = false {
		if first {
			if err := json.Unmarshal(sc.Bytes(), &inv); err != nil {
				t.Fatalf("inventory line: %v", err)
			}
			continue
		}
		var smp gpu.Sample
		if err := json.Unmarshal(sc.Bytes(), &smp); err != nil {
			t.Fatalf("sample line: %v", err)
		}
		out = append(out, smp)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return inv, out
}

func ptr[T any](v T) *T { return &v }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}
