package store_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func TestJoinTokens(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC()
		once := &models.JoinToken{Name: "rack-1", Hash: "h1", ExpiresAt: now.Add(time.Hour)}
		many := &models.JoinToken{Name: "fleet", Hash: "h2", Reusable: true, ExpiresAt: now.Add(time.Hour)}
		for _, tok := range []*models.JoinToken{once, many} {
			if err := s.CreateJoinToken(ctx, tok); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CreateJoinToken(ctx, &models.JoinToken{Name: "again", Hash: "h1", ExpiresAt: now}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("duplicate hash: %v, want ErrConflict", err)
		}
		got, err := s.JoinTokenByHash(ctx, "h1")
		if err != nil || got.ID != once.ID || got.UsedAt != nil {
			t.Fatalf("JoinTokenByHash = %+v, %v", got, err)
		}
		if err := s.UseJoinToken(ctx, once.ID, now); err != nil {
			t.Fatal(err)
		}
		if err := s.UseJoinToken(ctx, once.ID, now); !errors.Is(err, store.ErrStale) {
			t.Fatalf("second use of a single-use token: %v, want ErrStale", err)
		}
		for range 2 {
			if err := s.UseJoinToken(ctx, many.ID, now); err != nil {
				t.Fatalf("reusable token: %v", err)
			}
		}
		if err := s.RevokeJoinToken(ctx, "fleet", now); err != nil {
			t.Fatal(err)
		}
		if err := s.UseJoinToken(ctx, many.ID, now); !errors.Is(err, store.ErrStale) {
			t.Fatalf("use of a revoked token: %v, want ErrStale", err)
		}
		if err := s.RevokeJoinToken(ctx, "fleet", now); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("revoking twice: %v, want ErrNotFound", err)
		}
		if _, err := s.JoinTokenByHash(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown hash: %v", err)
		}
		if all, _ := s.JoinTokens(ctx); len(all) != 2 || all[0].Name != "fleet" {
			t.Fatalf("JoinTokens = %+v", all)
		}
	})
}

func TestNodeRegistrationAndLiveness(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		n := &models.Node{Name: "gpu-1", State: models.NodeReady, CredentialHash: "cred-1"}
		if err := s.SaveNode(ctx, n); err != nil || n.ID == 0 {
			t.Fatalf("SaveNode = %v, id %d", err, n.ID)
		}
		devs := []store.NodeDevice{
			{GPUDevice: models.GPUDevice{Index: 0, UUID: "GPU-a", Model: "A100-80GB", MemoryMiB: 81920, Healthy: true},
				Slices: []models.GPUSlice{{UUID: "MIG-a1", Profile: "3g.40gb", MemoryMiB: 40192, ComputeSlices: 3}}},
			{GPUDevice: models.GPUDevice{Index: 1, UUID: "GPU-b", Model: "A100-80GB", MemoryMiB: 81920, Healthy: true}},
		}
		if err := s.ReplaceNodeDevices(ctx, n.ID, devs); err != nil {
			t.Fatal(err)
		}
		// Again with one GPU gone and its MIG layout changed: the old rows must go.
		devs = []store.NodeDevice{{GPUDevice: models.GPUDevice{Index: 0, UUID: "GPU-a", Model: "A100-80GB", MemoryMiB: 81920, Healthy: true},
			Slices: []models.GPUSlice{{UUID: "MIG-a2", Profile: "7g.80gb", MemoryMiB: 81920, ComputeSlices: 7}}}}
		if err := s.ReplaceNodeDevices(ctx, n.ID, devs); err != nil {
			t.Fatal(err)
		}
		got, _ := s.DevicesOfNode(ctx, n.ID)
		slices, _ := s.SlicesOfNode(ctx, n.ID)
		if len(got) != 1 || got[0].UUID != "GPU-a" || len(slices) != 1 || slices[0].UUID != "MIG-a2" {
			t.Fatalf("after replace: devices %+v slices %+v", got, slices)
		}
		other := &models.Node{Name: "gpu-2", State: models.NodeReady}
		if err := s.SaveNode(ctx, other); err != nil {
			t.Fatal(err)
		}
		err := s.ReplaceNodeDevices(ctx, other.ID, []store.NodeDevice{{GPUDevice: models.GPUDevice{UUID: "GPU-a", Model: "x", MemoryMiB: 1}}})
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a UUID of another node: %v, want ErrConflict", err)
		}
		if got, _ := s.DevicesOfNodes(ctx, []int64{n.ID, other.ID}); len(got) != 1 {
			t.Fatalf("a failed replace must change nothing: %+v", got)
		}

		if byCred, err := s.NodeByCredentialHash(ctx, "cred-1"); err != nil || byCred.ID != n.ID {
			t.Fatalf("NodeByCredentialHash = %+v, %v", byCred, err)
		}
		if _, err := s.NodeByCredentialHash(ctx, ""); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an empty credential hash must match no node (gpu-2 has none): %v", err)
		}

		now := time.Now().UTC()
		if err := s.RecordHeartbeat(ctx, n.ID, now.Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordHeartbeat(ctx, other.ID, now); err != nil {
			t.Fatal(err)
		}
		watched := []string{models.NodeReady, models.NodeDraining}
		silent, err := s.NodesSilentSince(ctx, now.Add(-30*time.Second), watched)
		if err != nil || len(silent) != 1 || silent[0].ID != n.ID {
			t.Fatalf("silent nodes = %+v, %v", silent, err)
		}
		if err := s.MarkNodeLost(ctx, other.ID, watched, now.Add(-30*time.Second), "silent"); !errors.Is(err, store.ErrStale) {
			t.Fatalf("losing a node that spoke: %v, want ErrStale", err)
		}
		if err := s.MarkNodeLost(ctx, n.ID, watched, now.Add(-30*time.Second), "no heartbeat for 1m"); err != nil {
			t.Fatal(err)
		}
		lost, _ := s.NodeByID(ctx, n.ID)
		if lost.State != models.NodeLost || lost.StateReason != "no heartbeat for 1m" {
			t.Fatalf("lost node = %+v", lost)
		}
		if err := s.SetNodeState(ctx, n.ID, []string{models.NodeReady}, models.NodeDraining, ""); !errors.Is(err, store.ErrStale) {
			t.Fatalf("SetNodeState from the wrong state: %v, want ErrStale", err)
		}
		if err := s.SetNodeState(ctx, n.ID, []string{models.NodeLost}, models.NodeReady, "back"); err != nil {
			t.Fatal(err)
		}
		if ready, _ := s.NodesInStates(ctx, []string{models.NodeReady}); len(ready) != 2 {
			t.Fatalf("ready nodes = %+v", ready)
		}
	})
}

func TestAllocationsLogsAndAttempts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, p := fixture(t, s)
		j := &models.Job{Name: "train", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research", MaxRetries: 2}
		if err := s.CreateJob(ctx, j, "user:ada"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.ProjectByID(ctx, p.ID); err != nil || got.Name != p.Name {
			t.Fatalf("ProjectByID = %+v, %v", got, err)
		}
		if _, err := s.ProjectByID(ctx, 999); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("ProjectByID of nothing: %v", err)
		}
		n := &models.Node{Name: "gpu-1", State: models.NodeReady}
		if err := s.SaveNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		if q, err := s.QueuedJobs(ctx, 10); err != nil || len(q) != 1 || q[0].ID != j.ID {
			t.Fatalf("QueuedJobs = %+v, %v", q, err)
		}
		if err := s.SetPendingReason(ctx, j.ID, "no free A100"); err != nil {
			t.Fatal(err)
		}
		err := s.TransitionJob(ctx, j.ID, store.Transition{From: models.JobQueued, To: models.JobScheduled, Attempt: 1, Reason: "scheduled"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SetPendingReason(ctx, j.ID, "ignored: the job is not queued"); err != nil {
			t.Fatal(err)
		}
		allocs := []models.Allocation{
			{JobID: j.ID, Attempt: 1, Replica: 0, NodeID: n.ID, State: models.AllocPending, Devices: `[{"uuid":"GPU-a","milli":1000}]`},
			{JobID: j.ID, Attempt: 1, Replica: 1, NodeID: n.ID, State: models.AllocPending},
		}
		if err := s.CreateAllocations(ctx, allocs); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateAllocations(ctx, allocs[:1]); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("the same replica twice: %v, want ErrConflict", err)
		}
		a, err := s.AllocationByAttempt(ctx, j.ID, 1, 0)
		if err != nil || a.Devices != `[{"uuid":"GPU-a","milli":1000}]` {
			t.Fatalf("AllocationByAttempt = %+v, %v", a, err)
		}
		now := time.Now().UTC()
		if err := s.UpdateAllocation(ctx, a.ID, []string{models.AllocPending}, store.AllocationChange{State: models.AllocRunning, StartedAt: &now}); err != nil {
			t.Fatal(err)
		}
		code := 3
		err = s.UpdateAllocation(ctx, a.ID, []string{models.AllocPending}, store.AllocationChange{State: models.AllocEnded, ExitCode: &code})
		if !errors.Is(err, store.ErrStale) {
			t.Fatalf("update from the wrong state: %v, want ErrStale", err)
		}
		if err := s.UpdateAllocation(ctx, a.ID, []string{models.AllocRunning}, store.AllocationChange{State: models.AllocEnded, ExitCode: &code, EndedAt: &now}); err != nil {
			t.Fatal(err)
		}
		active, err := s.ActiveAllocations(ctx, n.ID)
		if err != nil || len(active) != 1 || active[0].Replica != 1 {
			t.Fatalf("active allocations = %+v, %v", active, err)
		}
		if all, _ := s.ActiveAllocationCounts(ctx); len(all) != 1 || all[n.ID] != 1 {
			t.Fatalf("active allocations by node = %v", all)
		}
		retries := 1
		err = s.TransitionJob(ctx, j.ID, store.Transition{From: models.JobScheduled, To: models.JobFailed, Retries: &retries, ExitCode: &code})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := s.JobByID(ctx, j.ID)
		if got.Attempt != 1 || got.Retries != 1 || got.ExitCode == nil || *got.ExitCode != 3 || got.PendingReason != "no free A100" {
			t.Fatalf("job = attempt %d retries %d exit %v pending %q", got.Attempt, got.Retries, got.ExitCode, got.PendingReason)
		}
		if jobs, _ := s.JobsByIDs(ctx, []int64{j.ID, 999}); len(jobs) != 1 {
			t.Fatalf("JobsByIDs = %+v", jobs)
		}

		end, err := s.LogEnd(ctx, j.ID, 1, 0, "stdout")
		if err != nil || end != 0 {
			t.Fatalf("LogEnd of nothing = %d, %v", end, err)
		}
		for _, c := range []models.JobLogChunk{
			{JobID: j.ID, Attempt: 1, Stream: "stdout", Offset: 0, Data: []byte("hello ")},
			{JobID: j.ID, Attempt: 1, Stream: "stderr", Offset: 0, Data: []byte("warn\n")},
			{JobID: j.ID, Attempt: 1, Stream: "stdout", Offset: 6, Data: []byte("world\n")},
			{JobID: j.ID, Attempt: 2, Stream: "stdout", Offset: 0, Data: []byte("other attempt\n")},
		} {
			if err := s.CreateLogChunk(ctx, &c); err != nil {
				t.Fatal(err)
			}
		}
		dup := models.JobLogChunk{JobID: j.ID, Attempt: 1, Stream: "stdout", Offset: 6, Data: []byte("x")}
		if err := s.CreateLogChunk(ctx, &dup); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a chunk at a taken offset: %v, want ErrConflict", err)
		}
		if end, _ := s.LogEnd(ctx, j.ID, 1, 0, "stdout"); end != 12 {
			t.Fatalf("LogEnd = %d, want 12", end)
		}
		chunks, err := s.LogChunks(ctx, store.LogFilter{JobID: j.ID, Attempt: 1})
		var all []byte
		for _, c := range chunks {
			all = append(all, c.Data...)
		}
		if err != nil || !bytes.Equal(all, []byte("hello warn\nworld\n")) {
			t.Fatalf("both streams in arrival order = %q, %v", all, err)
		}
		out, _ := s.LogChunks(ctx, store.LogFilter{JobID: j.ID, Attempt: 1, Stream: "stdout", AfterID: chunks[0].ID})
		if len(out) != 1 || string(out[0].Data) != "world\n" {
			t.Fatalf("stdout after the first chunk = %+v", out)
		}
		// A rewrite spans chunks, leaves the other stream and attempt alone, and leaves
		// out what is not stored.
		if err := s.RewriteLog(ctx, j.ID, 1, 0, "stdout", 4, []byte("ABCD")); err != nil {
			t.Fatal(err)
		}
		if err := s.RewriteLog(ctx, j.ID, 1, 0, "stdout", 10, []byte("XYZ")); err != nil {
			t.Fatal(err)
		}
		all = nil
		for _, a := range []int{1, 2} {
			chunks, err := s.LogChunks(ctx, store.LogFilter{JobID: j.ID, Attempt: a})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range chunks {
				all = append(all, c.Data...)
			}
		}
		if string(all) != "hellABwarn\nCDrlXYother attempt\n" {
			t.Fatalf("after the rewrites: %q", all)
		}
		if end, _ := s.LogEnd(ctx, j.ID, 1, 0, "stdout"); end != 12 {
			t.Fatalf("LogEnd after the rewrites = %d, want 12", end)
		}
		if _, err := s.LogTail(ctx, j.ID, 1, 0, "stdout"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("tail of a stream without one: %v, want ErrNotFound", err)
		}
		for _, tail := range []string{"hf_", "f_", ""} {
			if err := s.SetLogTail(ctx, &models.JobLogTail{JobID: j.ID, Attempt: 1, Stream: "stdout", Offset: 12 - int64(len(tail)), Data: []byte(tail)}); err != nil {
				t.Fatal(err)
			}
			got, err := s.LogTail(ctx, j.ID, 1, 0, "stdout")
			switch {
			case tail == "" && !errors.Is(err, store.ErrNotFound):
				t.Fatalf("an empty tail is kept: %+v, %v", got, err)
			case tail != "" && (err != nil || string(got.Data) != tail || got.Offset != 12-int64(len(tail))):
				t.Fatalf("tail = %+v, %v, want %q", got, err, tail)
			}
		}
	})
}

// One replica leads at a time; when it gives up, another takes over.
func TestLeaderLock(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			first := storetest.Open(t, cfg)
			ctx := context.Background()
			lctx, release, err := first.Lead(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if b.Name == "sqlite" {
				release()
				if lctx.Err() == nil {
					t.Fatal("giving up leadership did not end its context")
				}
				return
			}
			second := storetest.Open(t, cfg)
			led := make(chan func(), 1)
			go func() {
				_, r, err := second.Lead(ctx)
				if err != nil {
					t.Error(err)
				}
				led <- r
			}()
			select {
			case <-led:
				t.Fatal("two replicas lead at once")
			case <-time.After(3 * time.Second):
			}
			release()
			select {
			case r := <-led:
				r()
			case <-time.After(30 * time.Second):
				t.Fatal("the second replica never took over")
			}
			if lctx.Err() == nil {
				t.Fatal("the first leader's context outlived its leadership")
			}
		})
	}
}
