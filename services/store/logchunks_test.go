package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// Two writers of one chunk do not undo each other: the chunks LogChunksFrom reads in a
// transaction stay locked until it ends, so a RewriteLog begun meanwhile (which writes
// each chunk back whole) reads them after the change and keeps it. Without the lock a
// PostgreSQL RewriteLog reads the chunk as it was and writes the old bytes back.
func TestLogChunkWritersKeepEachOthersChanges(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, p := fixture(t, s)
		j := &models.Job{Name: "train", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
		if err := s.CreateJob(ctx, j, "user:ada"); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateLogChunk(ctx, &models.JobLogChunk{JobID: j.ID, Attempt: 1, Stream: "stdout", Data: []byte("token hf_abc; tail xyz")}); err != nil {
			t.Fatal(err)
		}
		rewritten := make(chan error, 1)
		err := s.InTx(ctx, func(tx *store.Store) error {
			chunks, err := tx.LogChunksFrom(ctx, j.ID, store.LogStream{Attempt: 1, Stream: "stdout"}, 0, 10)
			if err != nil || len(chunks) != 1 {
				t.Fatalf("chunks = %v, %v", chunks, err)
			}
			go func() { rewritten <- s.RewriteLog(ctx, j.ID, 1, 0, "stdout", 19, []byte("***")) }()
			time.Sleep(300 * time.Millisecond) // the rewrite reads the chunk meanwhile, or waits to
			return tx.SetLogChunkData(ctx, chunks[0].ID, []byte("token ******; tail xyz"))
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-rewritten; err != nil {
			t.Fatal(err)
		}
		chunks, err := s.LogChunks(ctx, store.LogFilter{JobID: j.ID, Attempt: 1, Stream: "stdout"})
		if err != nil || len(chunks) != 1 {
			t.Fatalf("chunks = %v, %v", chunks, err)
		}
		if got := string(chunks[0].Data); got != "token ******; tail ***" {
			t.Fatalf("the chunk after both writes = %q, want both changes", got)
		}
	})
}
