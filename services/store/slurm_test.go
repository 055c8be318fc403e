package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func slurmNode(name, state string, gpus int) store.PoolNode {
	pn := store.PoolNode{Node: models.Node{Name: name, State: state, StateReason: "Slurm: " + state, Runtime: models.RuntimeSlurm, CPUMilli: 8000, MemoryMiB: 8192}}
	for i := range gpus {
		pn.Devices = append(pn.Devices, models.GPUDevice{Index: i, UUID: fmt.Sprintf("slurm:%s:%d", name, i), Model: "A100-80GB", MemoryMiB: 81920, Healthy: true})
	}
	return pn
}

func TestSyncPoolNodes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		pool := &models.NodePool{Name: "hpc", Provider: "slurm", CapacityType: models.CapacityOwned}
		other := &models.NodePool{Name: "other", Provider: "static", CapacityType: models.CapacityOwned}
		for _, p := range []*models.NodePool{pool, other} {
			if err := s.CreateNodePool(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		const gone = "no longer in Slurm partition gpu"
		changes, err := s.SyncPoolNodes(ctx, pool.ID, []store.PoolNode{slurmNode("hpc.a", models.NodeReady, 2), slurmNode("hpc.b", models.NodeReady, 1)}, gone)
		if err != nil || len(changes) != 2 || changes[0].From != "" || changes[0].To != models.NodeReady || changes[0].GPUsAfter != 2 {
			t.Fatalf("first sync: %+v, %v", changes, err)
		}
		a, _ := s.NodeByName(ctx, "hpc.a")
		devs, _ := s.DevicesOfNode(ctx, a.ID)
		if *a.PoolID != pool.ID || a.Runtime != models.RuntimeSlurm || len(devs) != 2 {
			t.Fatalf("node %+v with %d GPUs", a, len(devs))
		}
		// The same report again changes nothing, not even the devices' ids.
		if changes, err := s.SyncPoolNodes(ctx, pool.ID, []store.PoolNode{slurmNode("hpc.a", models.NodeReady, 2), slurmNode("hpc.b", models.NodeReady, 1)}, gone); err != nil || len(changes) != 0 {
			t.Fatalf("same report: %+v, %v", changes, err)
		}
		if again, _ := s.DevicesOfNode(ctx, a.ID); again[0].ID != devs[0].ID {
			t.Error("an unchanged report replaced the GPUs")
		}
		// The pool now says its GPUs are joined by NVLink: the same GPUs with peers are a change.
		linked := slurmNode("hpc.a", models.NodeReady, 2)
		linked.Devices[0].NVLinkPeers, linked.Devices[1].NVLinkPeers = "[1]", "[0]"
		if changes, err := s.SyncPoolNodes(ctx, pool.ID, []store.PoolNode{linked, slurmNode("hpc.b", models.NodeReady, 1)}, gone); err != nil || len(changes) != 1 {
			t.Fatalf("GPUs joined by NVLink: %+v, %v", changes, err)
		}
		if again, _ := s.DevicesOfNode(ctx, a.ID); again[1].NVLinkPeers != "[0]" {
			t.Errorf("the GPUs' peers were not stored: %+v", again)
		}
		// a is drained in Slurm and lost a GPU; b left the partition.
		changes, err = s.SyncPoolNodes(ctx, pool.ID, []store.PoolNode{slurmNode("hpc.a", models.NodeCordoned, 1)}, gone)
		if err != nil || len(changes) != 2 {
			t.Fatalf("second sync: %+v, %v", changes, err)
		}
		if c := changes[0]; c.Name != "hpc.a" || c.From != models.NodeReady || c.To != models.NodeCordoned || c.GPUsBefore != 2 || c.GPUsAfter != 1 {
			t.Errorf("change of a: %+v", c)
		}
		b, _ := s.NodeByName(ctx, "hpc.b")
		if b.State != models.NodeDown || b.StateReason != gone {
			t.Errorf("node that left: %s (%s)", b.State, b.StateReason)
		}
		if changes, _ := s.SyncPoolNodes(ctx, pool.ID, []store.PoolNode{slurmNode("hpc.a", models.NodeCordoned, 1)}, gone); len(changes) != 0 {
			t.Errorf("a node already gone is reported again: %+v", changes)
		}
		// A name another pool holds is refused, and nothing of the report is applied.
		if err := s.CreateNode(ctx, &models.Node{Name: "taken", PoolID: &other.ID, State: models.NodeReady}, nil); err != nil {
			t.Fatal(err)
		}
		_, err = s.SyncPoolNodes(ctx, pool.ID, []store.PoolNode{slurmNode("hpc.a", models.NodeReady, 1), slurmNode("taken", models.NodeReady, 1)}, gone)
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a taken name: %v, want ErrConflict", err)
		}
		if a, _ := s.NodeByName(ctx, "hpc.a"); a.State != models.NodeCordoned {
			t.Errorf("a refused report changed node a to %s", a.State)
		}
		// Slurm's nodes are never judged by their heartbeats.
		silent, err := s.NodesSilentSince(ctx, time.Now().Add(time.Hour), []string{models.NodeReady, models.NodeCordoned, models.NodeDown})
		if err != nil || len(silent) != 1 || silent[0].Name != "taken" {
			t.Errorf("silent nodes: %+v, %v", silent, err)
		}
	})
}

func TestSlurmJobsAndNotes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		pool := &models.NodePool{Name: "hpc", Provider: "slurm", CapacityType: models.CapacityOwned}
		if err := s.CreateNodePool(ctx, pool); err != nil {
			t.Fatal(err)
		}
		u := &models.User{Username: "ada"}
		team := &models.Team{Name: "vision"}
		if err := errors.Join(s.CreateUser(ctx, u), s.CreateTeam(ctx, team)); err != nil {
			t.Fatal(err)
		}
		proj := &models.Project{TeamID: team.ID, Name: "detect"}
		if err := s.CreateProject(ctx, proj); err != nil {
			t.Fatal(err)
		}
		job := &models.Job{Name: "train", ProjectID: proj.ID, UserID: u.ID, Command: `["true"]`, Replicas: 1}
		if err := s.CreateJob(ctx, job, "user:ada"); err != nil {
			t.Fatal(err)
		}
		sj := &models.SlurmJob{PoolID: pool.ID, JobID: job.ID, Attempt: 1, CurrentAttempt: 1, SlurmJobID: "42"}
		if err := s.CreateSlurmJob(ctx, sj); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateSlurmJob(ctx, &models.SlurmJob{PoolID: pool.ID, JobID: job.ID, Attempt: 1, CurrentAttempt: 1, SlurmJobID: "43"}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a second Slurm job for one attempt: %v, want ErrConflict", err)
		}
		if open, err := s.OpenSlurmJobs(ctx, pool.ID); err != nil || len(open) != 1 || open[0].SlurmJobID != "42" {
			t.Fatalf("open: %+v, %v", open, err)
		}
		sj.Done, sj.LogsDone, sj.Seen = true, true, `{"state":"COMPLETED"}`
		if err := s.SaveSlurmJob(ctx, sj); err != nil {
			t.Fatal(err)
		}
		if open, _ := s.OpenSlurmJobs(ctx, pool.ID); len(open) != 0 {
			t.Errorf("a finished Slurm job is still open: %+v", open)
		}
		if got, _ := s.SlurmJobsOfJob(ctx, job.ID); len(got) != 1 || got[0].Seen != sj.Seen {
			t.Errorf("Slurm jobs of the job: %+v", got)
		}

		if err := s.NoteJob(ctx, job.ID, models.JobQueued, "slurm-pending", "Slurm job 42 waits: Resources", "slurm:hpc"); err != nil {
			t.Fatal(err)
		}
		if err := s.NoteJob(ctx, job.ID, models.JobRunning, "slurm-pending", "x", "slurm:hpc"); !errors.Is(err, store.ErrStale) {
			t.Fatalf("a note for a state the job is not in: %v, want ErrStale", err)
		}
		got, _ := s.JobByID(ctx, job.ID)
		evs, _ := s.JobEvents(ctx, job.ID)
		last := evs[len(evs)-1]
		if got.PendingReason != "Slurm job 42 waits: Resources" || last.FromState != models.JobQueued || last.ToState != models.JobQueued || last.Reason != "slurm-pending" {
			t.Errorf("note: reason %q, event %+v", got.PendingReason, last)
		}
	})
}

func TestForeignJobsAndUtilisation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		pool := &models.NodePool{Name: "hpc", Provider: "slurm", CapacityType: models.CapacityOwned}
		if err := s.CreateNodePool(ctx, pool); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SyncPoolNodes(ctx, pool.ID, []store.PoolNode{slurmNode("hpc.a", models.NodeReady, 4), slurmNode("hpc.b", models.NodeDown, 4)}, "gone"); err != nil {
			t.Fatal(err)
		}
		start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		big := models.SlurmForeignJob{SlurmJobID: "12", Name: "sim", User: "bob", State: "RUNNING", Nodes: `["hpc.a","hpc.b"]`, GPUs: 2,
			GPUModel: "A100-80GB", CPUs: 4, MemoryMiB: 1024, SubmittedAt: start, StartedAt: &start}
		waiting := models.SlurmForeignJob{SlurmJobID: "9", Name: "later", State: "PENDING", Reason: "Resources", Nodes: `[]`, GPUs: 4, SubmittedAt: start}
		if err := s.SyncForeignJobs(ctx, pool.ID, []models.SlurmForeignJob{waiting, big}); err != nil {
			t.Fatal(err)
		}
		got, err := s.SlurmForeignJobs(ctx, pool.ID)
		if err != nil || len(got) != 2 || got[0].SlurmJobID != "12" || got[1].SlurmJobID != "9" || got[0].User != "bob" || !got[0].StartedAt.Equal(start) {
			t.Fatalf("jobs outside Gantry, running first: %+v, %v", got, err)
		}
		// Only the running job's GPUs on a node that is up count.
		c, err := s.GPUCapacity(ctx)
		if err != nil || c.ForeignMilli != 2000 || c.TotalMilli != 4000 {
			t.Errorf("capacity %+v, %v; want 2 GPUs outside Gantry of 4", c, err)
		}
		// The job ended; the waiting one started.
		waiting.State, waiting.Reason, waiting.Nodes, waiting.StartedAt = "RUNNING", "", `["hpc.a"]`, &start
		if err := s.SyncForeignJobs(ctx, pool.ID, []models.SlurmForeignJob{waiting}); err != nil {
			t.Fatal(err)
		}
		got, _ = s.SlurmForeignJobs(ctx, 0)
		if len(got) != 1 || got[0].SlurmJobID != "9" || got[0].State != "RUNNING" || got[0].Nodes != `["hpc.a"]` || got[0].ID == 0 {
			t.Errorf("after the second poll: %+v", got)
		}
		if c, _ := s.GPUCapacity(ctx); c.ForeignMilli != 4000 {
			t.Errorf("capacity after the second poll: %+v", c)
		}
	})
}

// A pool's cluster-move mark: marked again, it takes the new clusters and reason and
// keeps when it was found and last seen; unmarked, it is gone.
func TestSlurmClusterMove(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		pool := &models.NodePool{Name: "hpc", Provider: "slurm", CapacityType: models.CapacityOwned}
		if err := s.CreateNodePool(ctx, pool); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SlurmClusterMove(ctx, pool.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an unmarked pool: %v, want not found", err)
		}
		found := time.Date(2026, 11, 30, 10, 0, 30, 0, time.UTC)
		if err := s.MarkSlurmClusterMove(ctx, &models.SlurmClusterMove{PoolID: pool.ID, JobsCluster: "a", ConfCluster: "b", Reason: "to b",
			FoundAt: found, LastSeenAt: found.Add(-2 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkSlurmClusterMove(ctx, &models.SlurmClusterMove{PoolID: pool.ID, JobsCluster: "a", ConfCluster: "c", Reason: "to c",
			FoundAt: found.Add(time.Hour), LastSeenAt: found.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		m, err := s.SlurmClusterMove(ctx, pool.ID)
		if err != nil || m.JobsCluster != "a" || m.ConfCluster != "c" || m.Reason != "to c" || !m.FoundAt.Equal(found) || !m.LastSeenAt.Equal(found.Add(-2*time.Second)) {
			t.Fatalf("marked twice: %+v, %v", m, err)
		}
		if err := s.UnmarkSlurmClusterMove(ctx, pool.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SlurmClusterMove(ctx, pool.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unmarked: %v, want not found", err)
		}
		if err := s.UnmarkSlurmClusterMove(ctx, pool.ID); err != nil {
			t.Errorf("unmarking an unmarked pool: %v", err)
		}
	})
}
