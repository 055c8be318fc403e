package dispatch_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// The first lease answer that lists an allocation carries its job token, once; the
// store keeps only its hash; the token speaks for its own job while its attempt lasts.
func TestJobTokenIsMintedOnceAndHoldsWhileTheAttemptRuns(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "2xL4-24GB")
		j := e.submit("train", 1)
		other := e.submit("other", 1)
		e.svc.Tick(e.ctx)
		first := e.leases(n)
		again := e.leases(n)
		token := ""
		for _, l := range first.Allocations {
			if l.JobID == j.ID {
				token = l.JobToken
			}
			if !strings.HasPrefix(l.JobToken, dispatch.JobTokenPrefix) {
				t.Fatalf("first lease of job %d carries token %q; want one starting %s", l.JobID, l.JobToken, dispatch.JobTokenPrefix)
			}
		}
		for _, l := range again.Allocations {
			if l.JobToken != "" {
				t.Fatalf("a second lease answer carries the token again: %+v", l)
			}
		}
		if first.Version != again.Version {
			t.Errorf("the version changed with the token alone: %s then %s", first.Version, again.Version)
		}
		a, err := st.AllocationByAttempt(e.ctx, j.ID, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(token))
		if a.JobTokenHash != hex.EncodeToString(sum[:]) || strings.Contains(a.JobTokenHash, token) {
			t.Fatalf("stored %q; want the SHA-256 of the token only", a.JobTokenHash)
		}

		caller, err := e.svc.AuthenticateJob(e.ctx, token, j.ID)
		if err != nil || caller.Job.ID != j.ID || caller.Allocation.Attempt != 1 {
			t.Fatalf("AuthenticateJob = %+v, %v", caller, err)
		}
		if _, err := e.svc.AuthenticateJob(e.ctx, token, other.ID); !errors.Is(err, dispatch.ErrOtherJob) {
			t.Errorf("token for another job: %v, want ErrOtherJob", err)
		}
		for _, bad := range []string{"", "gjb_forged", "gty_an-api-token"} {
			if _, err := e.svc.AuthenticateJob(e.ctx, bad, j.ID); !errors.Is(err, dispatch.ErrUnauthorized) {
				t.Errorf("token %q: %v, want ErrUnauthorized", bad, err)
			}
		}
		ref := agentapi.AttemptRef{JobID: j.ID, Attempt: 1}
		e.mustReport(n, ref, agentapi.EventStarted, nil)
		if _, err := e.svc.AuthenticateJob(e.ctx, token, j.ID); err != nil {
			t.Fatalf("token of a running attempt: %v", err)
		}
		e.mustReport(n, ref, agentapi.EventExited, code(0))
		if _, err := e.svc.AuthenticateJob(e.ctx, token, j.ID); !errors.Is(err, dispatch.ErrUnauthorized) || !strings.Contains(err.Error(), "has ended") {
			t.Errorf("token of an ended attempt: %v, want ErrUnauthorized saying it ended", err)
		}
		if got := e.auditActions(); slices.Index(got, "job_token.refused") < 0 {
			t.Errorf("refused job tokens not audited: %v", got)
		}
	})
}

// An agent that lost the answer carrying a token gets a new one until the attempt
// starts; the earlier token stops holding; another node gets nothing.
func TestJobTokenReissue(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "1xL4-24GB")
		stranger := e.join("gpu-2", "")
		j := e.submit("train", 1)
		e.svc.Tick(e.ctx)
		lost := e.leases(n).Allocations[0].JobToken
		ref := agentapi.AttemptRef{JobID: j.ID, Attempt: 1}
		if _, err := e.svc.ReissueJobToken(e.ctx, stranger.Node, ref); !errors.Is(err, dispatch.ErrStaleAttempt) {
			t.Errorf("reissue from another node: %v, want ErrStaleAttempt", err)
		}
		token, err := e.svc.ReissueJobToken(e.ctx, n.Node, ref)
		if err != nil || token == lost || !strings.HasPrefix(token, dispatch.JobTokenPrefix) {
			t.Fatalf("reissue = %q, %v", token, err)
		}
		if _, err := e.svc.AuthenticateJob(e.ctx, lost, j.ID); !errors.Is(err, dispatch.ErrUnauthorized) {
			t.Errorf("the replaced token: %v, want ErrUnauthorized", err)
		}
		if _, err := e.svc.AuthenticateJob(e.ctx, token, j.ID); err != nil {
			t.Errorf("the new token: %v", err)
		}
		e.mustReport(n, ref, agentapi.EventStarted, nil)
		if _, err := e.svc.ReissueJobToken(e.ctx, n.Node, ref); !errors.Is(err, store.ErrConflict) {
			t.Errorf("reissue after the start: %v, want ErrConflict", err)
		}
		if _, err := e.svc.ReissueJobToken(e.ctx, n.Node, agentapi.AttemptRef{JobID: j.ID}); err == nil {
			t.Error("a reference without an attempt was accepted")
		}
		if !slices.Contains(e.auditActions(), "job_token.reissued") {
			t.Error("reissue not audited")
		}
	})
}

// A job asked to checkpoint answers through the API; its lease then says so, so the
// agent stops it without waiting out the grace. The checkpoint is stored and audited.
func TestCheckpointAnswerMovesTheStopOn(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		victim := new(int64)
		e := newEnv(t, st, preempting{victim: victim})
		n := e.join("gpu-1", "1xL4-24GB")
		j := e.submit("low", 1, func(j *models.Job) { j.PriorityClass = "test"; j.Preemptible = true })
		e.svc.Tick(e.ctx)
		token := e.leases(n).Allocations[0].JobToken
		e.mustReport(n, agentapi.AttemptRef{JobID: j.ID, Attempt: 1}, agentapi.EventStarted, nil)
		record := func(b telemetry.MetricBatch) telemetry.MetricResult {
			t.Helper()
			caller, err := e.svc.AuthenticateJob(e.ctx, token, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.svc.RecordJobMetrics(e.ctx, caller, b)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		// A routine checkpoint while running answers nothing.
		record(telemetry.MetricBatch{Checkpoints: []telemetry.CheckpointEvent{{Step: 100}}})
		*victim = j.ID
		e.submit("high", 1, func(j *models.Job) { j.PriorityClass = "production" })
		e.svc.Tick(e.ctx)
		l := e.leases(n).Allocations
		if len(l) != 1 || l[0].Stop == nil || l[0].Stop.CheckpointSaved {
			t.Fatalf("lease before the answer = %+v; want a stop not yet answered", l)
		}
		before := e.leases(n).Version
		res := record(telemetry.MetricBatch{
			Points:      []telemetry.MetricPoint{{Step: 150, Values: map[string]float64{"loss": 0.5}}},
			Checkpoints: []telemetry.CheckpointEvent{{Step: 150}},
		})
		if res.Stored != 2 {
			t.Fatalf("answer stored %+v; want the point and the checkpoint", res)
		}
		after := e.leases(n)
		if after.Version == before || after.Allocations[0].Stop == nil || !after.Allocations[0].Stop.CheckpointSaved {
			t.Fatalf("lease after the answer = %+v; want a new version whose stop says the checkpoint is saved", after)
		}
		got, err := st.JobMetrics(e.ctx, store.JobMetricFilter{JobID: j.ID, Names: []string{telemetry.MetricCheckpoint}})
		if err != nil || len(got) != 2 || got[1].Step != 150 {
			t.Errorf("checkpoints stored = %+v, %v", got, err)
		}
		if n := strings.Count(strings.Join(e.auditActions(), " "), "job.checkpointed"); n != 2 {
			t.Errorf("%d checkpoint events audited, want 2", n)
		}
	})
}
