package store_test

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// ActiveAllocations and ActiveAllocationsWithJobs read each allocation that is not
// ended as the getter does, every field, NULLs included, the latter with its job's
// placement fields and none of its texts, in a transaction too; ActiveAllocationDevices
// reads their GPUs and jobs, ActiveAllocationCounts counts them by node.
func TestActiveAllocationsReadAsTheGetter(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		user, project := fixture(t, s)
		node, other := &models.Node{Name: "n1", State: models.NodeReady}, &models.Node{Name: "n2", State: models.NodeReady}
		for _, n := range []*models.Node{node, other} {
			if err := s.CreateNode(ctx, n, nil); err != nil {
				t.Fatal(err)
			}
		}
		// Values differ from each other where columns share a type, so that two swapped read wrong.
		wide := &models.Job{Name: "wide", ProjectID: project.ID, UserID: user.ID, ImageRef: "nvcr.io/nvidia/pytorch:24.07-py3",
			Command: `["python","train.py"]`, Env: `{"SEED":"1"}`, GPUs: 2, GPUMilli: 0, GPUMemoryMiB: 40960, GPUModel: "H100-80GB|A100-80GB",
			MIGProfile: "", CPUMilli: 8000, MemoryMiB: 65536, ScratchMiB: 1024, Replicas: 3, Kind: "gang", PriorityClass: "production",
			Preemptible: true, Spot: true, ExpectedRunSec: 3600}
		small := &models.Job{Name: "small", ProjectID: project.ID, UserID: user.ID, Command: `["true"]`, GPUMilli: 250,
			MIGProfile: "1g.10gb", CPUMilli: 1000, MemoryMiB: 2048, PriorityClass: "research"}
		for _, j := range []*models.Job{wide, small} {
			if err := s.CreateJob(ctx, j, "user:ada"); err != nil {
				t.Fatal(err)
			}
		}
		started, saved := time.Date(2026, 3, 2, 9, 0, 0, 123456000, time.UTC), time.Date(2026, 3, 2, 9, 5, 0, 0, time.UTC)
		code := 3
		allocs := []models.Allocation{
			{JobID: wide.ID, Attempt: 1, Replica: 0, NodeID: node.ID, Devices: `[{"uuid":"GPU-0","milli":1000}]`, GPUMilli: 2000, CPUMilli: 8000,
				MemoryMiB: 65536, ScratchMiB: 1024, State: models.AllocRunning, JobTokenHash: "hash", CheckpointSavedAt: &saved, StartedAt: &started},
			{JobID: wide.ID, Attempt: 1, Replica: 1, NodeID: node.ID, State: models.AllocEnded, StopReason: "preempted", ExitCode: &code,
				StartedAt: &started, EndedAt: &saved},
			{JobID: small.ID, Attempt: 1, NodeID: other.ID, Devices: "[]", GPUMilli: 250, CPUMilli: 1000, MemoryMiB: 2048, State: models.AllocPending},
		}
		if err := s.CreateAllocations(ctx, allocs); err != nil {
			t.Fatal(err)
		}
		var want []store.AllocatedJob
		for _, a := range []models.Allocation{allocs[0], allocs[2]} {
			got, err := s.AllocationByAttempt(ctx, a.JobID, a.Attempt, a.Replica)
			if err != nil {
				t.Fatal(err)
			}
			j, err := s.JobByID(ctx, a.JobID)
			if err != nil {
				t.Fatal(err)
			}
			placement := models.Job{ID: j.ID, Name: j.Name, ProjectID: j.ProjectID, UserID: j.UserID, ImageID: j.ImageID, ImageRef: j.ImageRef,
				GPUs: j.GPUs, GPUMilli: j.GPUMilli, GPUMemoryMiB: j.GPUMemoryMiB, GPUModel: j.GPUModel, MIGProfile: j.MIGProfile, CPUMilli: j.CPUMilli,
				MemoryMiB: j.MemoryMiB, ScratchMiB: j.ScratchMiB, Replicas: j.Replicas, Kind: j.Kind, PriorityClass: j.PriorityClass,
				Preemptible: j.Preemptible, Spot: j.Spot, ExpectedRunSec: j.ExpectedRunSec, Attempt: j.Attempt, State: j.State,
				SubmittedAt: j.SubmittedAt, StartedAt: j.StartedAt}
			want = append(want, store.AllocatedJob{Allocation: *got, Job: placement})
		}
		for _, tx := range []bool{false, true} {
			read := func(s *store.Store) error {
				got, err := s.ActiveAllocationsWithJobs(ctx)
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("in a transaction: %v: ActiveAllocationsWithJobs = %+v, %v\nwant %+v", tx, got, err, want)
				}
				for nodeID, want := range map[int64][]models.Allocation{node.ID: {want[0].Allocation}, other.ID: {want[1].Allocation}} {
					if got, err := s.ActiveAllocations(ctx, nodeID); err != nil || !reflect.DeepEqual(got, want) {
						t.Errorf("in a transaction: %v: ActiveAllocations(%d) = %+v, %v\nwant %+v", tx, nodeID, got, err, want)
					}
				}
				devices, err := s.ActiveAllocationDevices(ctx)
				slices.SortFunc(devices, func(a, b store.AllocationDevices) int { return cmp.Compare(a.JobID, b.JobID) })
				wantDevices := []store.AllocationDevices{{JobID: wide.ID, Devices: allocs[0].Devices}, {JobID: small.ID, Devices: "[]"}}
				if err != nil || !reflect.DeepEqual(devices, wantDevices) {
					t.Errorf("in a transaction: %v: ActiveAllocationDevices = %+v, %v; want %+v", tx, devices, err, wantDevices)
				}
				if got, err := s.ActiveAllocationCounts(ctx); err != nil || !reflect.DeepEqual(got, map[int64]int{node.ID: 1, other.ID: 1}) {
					t.Errorf("in a transaction: %v: ActiveAllocationCounts = %v, %v", tx, got, err)
				}
				return nil
			}
			if !tx {
				_ = read(s)
			} else if err := s.InTx(ctx, read); err != nil {
				t.Fatal(err)
			}
		}
		if n := reflect.TypeFor[models.Allocation]().NumField(); n != len(store.AllocationColumns) {
			t.Errorf("an allocation has %d fields; ActiveAllocationsWithJobs reads %d columns", n, len(store.AllocationColumns))
		}
	})
}

// ActiveAllocationUses reads what each allocation that is not ended holds, with the team
// of its job's project, in a transaction too.
func TestActiveAllocationUsesNameEachTeam(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		user, vision := fixture(t, s)
		team := &models.Team{Name: "speech"}
		if err := s.CreateTeam(ctx, team); err != nil {
			t.Fatal(err)
		}
		speech := &models.Project{TeamID: team.ID, Name: "asr"}
		if err := s.CreateProject(ctx, speech); err != nil {
			t.Fatal(err)
		}
		node := &models.Node{Name: "n1", State: models.NodeReady}
		if err := s.CreateNode(ctx, node, nil); err != nil {
			t.Fatal(err)
		}
		var jobs []*models.Job
		for _, p := range []*models.Project{vision, speech, speech} {
			j := &models.Job{Name: "j", ProjectID: p.ID, UserID: user.ID, Command: `["true"]`, PriorityClass: "research"}
			if err := s.CreateJob(ctx, j, "user:ada"); err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, j)
		}
		// Each figure differs from the others, so that two columns swapped read wrong.
		if err := s.CreateAllocations(ctx, []models.Allocation{
			{JobID: jobs[0].ID, Attempt: 1, NodeID: node.ID, Devices: `[{"uuid":"GPU-0","milli":1000}]`, CPUMilli: 8000, MemoryMiB: 65536, State: models.AllocRunning},
			{JobID: jobs[1].ID, Attempt: 1, NodeID: node.ID, Devices: `[{"uuid":"GPU-1","milli":250}]`, CPUMilli: 1000, MemoryMiB: 2048, State: models.AllocPending},
			{JobID: jobs[2].ID, Attempt: 1, NodeID: node.ID, Devices: `[{"uuid":"GPU-2","milli":1000}]`, CPUMilli: 3000, MemoryMiB: 4096, State: models.AllocEnded},
		}); err != nil {
			t.Fatal(err)
		}
		want := []store.AllocationUse{
			{TeamID: vision.TeamID, Devices: `[{"uuid":"GPU-0","milli":1000}]`, CPUMilli: 8000, MemoryMiB: 65536},
			{TeamID: team.ID, Devices: `[{"uuid":"GPU-1","milli":250}]`, CPUMilli: 1000, MemoryMiB: 2048},
		}
		read := func(s *store.Store) error {
			got, err := s.ActiveAllocationUses(ctx)
			slices.SortFunc(got, func(a, b store.AllocationUse) int { return cmp.Compare(b.CPUMilli, a.CPUMilli) })
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("ActiveAllocationUses = %+v, %v\nwant %+v", got, err, want)
			}
			return nil
		}
		_ = read(s)
		if err := s.InTx(ctx, read); err != nil {
			t.Fatal(err)
		}
	})
}

// The reads of allocations that are not ended go through index allocations_active (or,
// for a node's, an index by node), never through every allocation ever made: ended ones
// outnumber them more every day.
func TestActiveAllocationReadsUseTheirIndex(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		plans, err := s.ActiveAllocationPlans(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(plans) != 5 {
			t.Fatalf("plans of %d reads, want 5", len(plans))
		}
		for name, plan := range plans {
			read := 0
			for _, line := range plan {
				// SQLite: "SCAN a USING INDEX …", PostgreSQL: "Index Scan using … on allocations a".
				f := strings.Fields(strings.TrimLeft(line, " ->"))
				sqlite := len(f) > 1 && (f[0] == "SCAN" || f[0] == "SEARCH") && (f[1] == "allocations" || f[1] == "a")
				if !sqlite && !strings.Contains(line, " on allocations") {
					continue
				}
				read++
				if !strings.Contains(line, "allocations_active") {
					t.Errorf("%s reads allocations not through allocations_active: %q\n%s", name, line, strings.Join(plan, "\n"))
				}
			}
			if read != 1 {
				t.Errorf("%s: %d steps read allocations, want 1:\n%s", name, read, strings.Join(plan, "\n"))
			}
		}
	})
}
