package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// DeleteJobOutput notes each job once, however often it is asked (a pass cut off after
// noting goes on where it stopped), hands only the newly noted to the audit, and deletes
// every chunk however many there are, a bounded number a statement; other jobs' output
// stays.
func TestDeleteJobOutputNotesOnceAndDeletesAll(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		u, p := fixture(t, st)
		var jobs []store.EndedJob
		for i, chunks := range []int{2500, 3, 2} { // the first over two statements' worth
			j := &models.Job{Name: "j", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, Env: "{}", PriorityClass: "research", Replicas: 1}
			if err := st.CreateJob(ctx, j, "user:ada"); err != nil {
				t.Fatal(err)
			}
			for c := range chunks {
				if err := st.CreateLogChunk(ctx, &models.JobLogChunk{JobID: j.ID, Stream: "stdout", Offset: int64(c), Data: []byte("x")}); err != nil {
					t.Fatal(err)
				}
			}
			if i < 2 {
				jobs = append(jobs, store.EndedJob{ID: j.ID, State: models.JobQueued})
			}
		}
		kept := jobs[1].ID + 1
		// The second job was noted by a pass cut off before its chunks went.
		if err := st.NoteAttempt(ctx, jobs[1].ID, 0, "log retention", "output deleted"); err != nil {
			t.Fatal(err)
		}
		var audited []int64
		n, err := st.DeleteJobOutput(ctx, jobs, "log retention", "output deleted", "system", func(_ *store.Store, noted []store.EndedJob) error {
			for _, j := range noted {
				audited = append(audited, j.ID)
			}
			return nil
		})
		if err != nil || n != 2503 {
			t.Fatalf("deleted %d chunks, %v; want 2503", n, err)
		}
		if !slices.Equal(audited, []int64{jobs[0].ID}) {
			t.Errorf("audited %v, want only the job not noted before (%d)", audited, jobs[0].ID)
		}
		for _, id := range []int64{jobs[0].ID, jobs[1].ID, kept} {
			chunks, err := st.LogChunks(ctx, store.LogFilter{JobID: id, Limit: 5000})
			if err != nil {
				t.Fatal(err)
			}
			evs, err := st.JobEvents(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			notes := 0
			for _, e := range evs {
				if e.Reason == "log retention" {
					notes++
				}
			}
			wantChunks, wantNotes := 0, 1
			if id == kept {
				wantChunks, wantNotes = 2, 0
			}
			if len(chunks) != wantChunks || notes != wantNotes {
				t.Errorf("job %d: %d chunks and %d notes left, want %d and %d", id, len(chunks), notes, wantChunks, wantNotes)
			}
		}
	})
}
