package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// POST /api/v1/jobs with an Idempotency-Key: the same request again gets the first
// job (201, Idempotent-Replayed), another body with the key is a 400 naming it, and so
// is a malformed key; without the header every request queues a job.
func TestSubmittingTwiceWithAnIdempotencyKey(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		s := newJobsSite(t, st)
		token, _, err := s.id.CreateToken(ctx, mustUser(t, st, "admin"), "ci", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		post := func(body, key string) (*http.Response, int64, string) {
			t.Helper()
			h := map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}
			if key != "-" {
				h["Idempotency-Key"] = key
			}
			res, out := s.send(s.browser(), "POST", "/api/v1/jobs", body, h)
			var j struct{ ID int64 }
			json.Unmarshal([]byte(out), &j)
			return res, j.ID, out
		}
		const job = `{"project": "vision-main", "name": "nightly", "command": ["true"]}`
		before, err := st.Jobs(ctx, store.JobFilter{})
		if err != nil {
			t.Fatal(err)
		}
		res, first, body := post(job, "run-2026-12-07")
		if res.StatusCode != http.StatusCreated || first == 0 || res.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first = %d %s", res.StatusCode, body)
		}
		res, again, body := post(job, "run-2026-12-07")
		if res.StatusCode != http.StatusCreated || again != first || res.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("the same again = %d %s (replayed %q); want 201 with job %d", res.StatusCode, body, res.Header.Get("Idempotent-Replayed"), first)
		}
		for _, bad := range []struct{ body, key, says string }{
			{strings.Replace(job, "nightly", "other", 1), "run-2026-12-07", "was sent with another job"},
			{job, "", "must be 1 to 255 characters"},
			{job, "two words", "printable ASCII"},
		} {
			res, _, body := post(bad.body, bad.key)
			var e errorBody
			if err := json.Unmarshal([]byte(body), &e); err != nil || res.StatusCode != http.StatusBadRequest || e.Error.Field != "Idempotency-Key" || !strings.Contains(e.Error.Message, bad.says) {
				t.Errorf("key %q = %d %s; want 400 naming Idempotency-Key: %s", bad.key, res.StatusCode, body, bad.says)
			}
		}
		if _, id1, _ := post(job, "-"); id1 == 0 || id1 == first {
			t.Errorf("without the header the job was not queued anew: %d", id1)
		}
		after, err := st.Jobs(ctx, store.JobFilter{})
		if err != nil || len(after) != len(before)+2 {
			t.Errorf("%d jobs queued, %v; want 2 (the keyed one once, the plain one)", len(after)-len(before), err)
		}
	})
}
