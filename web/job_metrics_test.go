package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// jobWorld is a server with a node running two jobs, and the job token of each.
type jobWorld struct {
	st     *store.Store
	srv    *httptest.Server
	jobs   [2]*models.Job
	tokens [2]string
	// pending is a job placed on the node whose agent has not started it.
	pending    *models.Job
	credential string
}

func newJobWorld(t *testing.T, st *store.Store) *jobWorld {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	al := audit.New(st, time.Now)
	tel, err := telemetry.New(st, telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := dispatch.New(dispatch.Deps{Store: st, Scheduler: dispatchtest.FirstFit{}, Audit: al, Telemetry: tel, Now: time.Now, Log: log}, dispatch.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	join, _, err := dispatch.CreateJoinToken(ctx, st, al, time.Now(), dispatch.JoinTokenSpec{Name: "t", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	sim, _ := gpu.NewSimulated("2xL4-24GB", "gpu-1", time.Now)
	inv, _ := sim.Discover(ctx)
	joined, err := d.Join(ctx, agentapi.JoinRequest{JoinToken: join, Name: "gpu-1", Runtime: agentapi.RuntimeProcess, CPUMilli: 8000, MemoryMiB: 16384, Inventory: inv})
	if err != nil {
		t.Fatal(err)
	}
	node, err := d.Authenticate(ctx, joined.Credential)
	if err != nil {
		t.Fatal(err)
	}
	u := &models.User{Username: "ada"}
	tm := &models.Team{Name: "vision"}
	if err := st.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTeam(ctx, tm); err != nil {
		t.Fatal(err)
	}
	p := &models.Project{TeamID: tm.ID, Name: "detect"}
	if err := st.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	w := &jobWorld{st: st, credential: joined.Credential}
	w.pending = &models.Job{Name: "pending", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, Env: "{}", CPUMilli: 1000, MemoryMiB: 1024,
		Replicas: 1, Kind: models.KindBatch, PriorityClass: "research"}
	if err := st.CreateJob(ctx, w.pending, "user:ada"); err != nil {
		t.Fatal(err)
	}
	for i := range w.jobs {
		j := &models.Job{Name: fmt.Sprint("train-", i), ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, Env: "{}", GPUs: 1, CPUMilli: 1000, MemoryMiB: 1024,
			Replicas: 1, Kind: models.KindTraining, PriorityClass: "research"}
		if err := st.CreateJob(ctx, j, "user:ada"); err != nil {
			t.Fatal(err)
		}
		w.jobs[i] = j
	}
	d.Tick(ctx)
	leases, err := d.Leases(ctx, node, "", 0)
	if err != nil || len(leases.Allocations) != 3 {
		t.Fatalf("leases = %+v, %v", leases, err)
	}
	for _, l := range leases.Allocations {
		if l.JobID == w.pending.ID {
			continue
		}
		i := 0
		if l.JobID == w.jobs[1].ID {
			i = 1
		}
		w.tokens[i] = l.JobToken
		if err := d.Report(ctx, node, agentapi.Report{AttemptRef: l.AttemptRef, Event: agentapi.EventStarted}); err != nil {
			t.Fatal(err)
		}
	}
	w.srv = httptest.NewServer(NewRouter(Config{Store: st, Version: "test", Log: log, Dispatch: d}))
	t.Cleanup(w.srv.Close)
	return w
}

// post sends body to the metrics of job i with token and returns the status and body.
func (w *jobWorld) post(t *testing.T, i int, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/v1/jobs/%d/metrics", w.srv.URL, w.jobs[i].ID), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// A job reports its metrics with its token; everything else is refused with a
// message that says why, and nothing of a refused batch is stored.
func TestJobMetricsAPI(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		w := newJobWorld(t, st)
		status, body := w.post(t, 0, w.tokens[0], `{"points": [{"step": 10, "values": {"loss": 2.5, "samples_per_sec": 310}},
			{"step": 20, "values": {"loss": 2.1, "samples_per_sec": 320, "accuracy": 0.4}}], "checkpoints": [{"step": 20}]}`)
		var res telemetry.MetricResult
		if err := json.Unmarshal([]byte(body), &res); status != http.StatusOK || err != nil || res.Stored != 6 {
			t.Fatalf("good batch = %d %s", status, body)
		}
		future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		oversized := `{"points": [` + strings.Repeat(`{"step": 1, "values": {"loss": 1}},`, telemetry.MaxPointsPerBatch) + `{"step": 2, "values": {"loss": 1}}]}`
		huge := `{"points": [{"step": 1, "values": {"loss": 1}}], "pad": "` + strings.Repeat("x", 2<<20) + `"}`
		for _, c := range []struct {
			name   string
			job    int
			token  string
			body   string
			status int
			want   string
		}{
			{"no token", 0, "", `{"points": [{"step": 30, "values": {"loss": 1}}]}`, 401, "no job token"},
			{"unknown token", 0, "gjb_forged", `{"points": [{"step": 30, "values": {"loss": 1}}]}`, 401, "unknown job token"},
			{"another job's token", 1, w.tokens[0], `{"points": [{"step": 30, "values": {"loss": 1}}]}`, 403, "another job"},
			{"NaN", 0, w.tokens[0], `{"points": [{"step": 30, "values": {"loss": NaN}}]}`, 400, "NaN and Infinity are not JSON numbers"},
			{"Infinity", 0, w.tokens[0], `{"points": [{"step": 30, "values": {"loss": Infinity}}]}`, 400, "NaN and Infinity are not JSON numbers"},
			{"future time", 0, w.tokens[0], `{"points": [{"step": 30, "time": "` + future + `", "values": {"loss": 1}}]}`, 400, "points[0].time: " + future},
			{"out of order", 0, w.tokens[0], `{"points": [{"step": 40, "values": {"loss": 1}}, {"step": 35, "values": {"loss": 1}}]}`, 400, "points[1].step"},
			{"oversized batch", 0, w.tokens[0], oversized, 400, "at most 1000 per batch"},
			{"oversized body", 0, w.tokens[0], huge, 413, "over 1 MiB"},
			{"unknown field", 0, w.tokens[0], `{"points": [{"step": 30, "valeus": {"loss": 1}}]}`, 400, "valeus"},
			{"a key in capitals", 0, w.tokens[0], `{"Points": [{"step": 30, "values": {"loss": 1}}]}`, 400, `write \"points\"","field":"Points"`},
			{"a point's key in capitals", 0, w.tokens[0], `{"points": [{"Step": 30, "values": {"loss": 1}}]}`, 400, `"field":"points[0].Step"`},
		} {
			status, body := w.post(t, c.job, c.token, c.body)
			if status != c.status || !strings.Contains(body, c.want) {
				t.Errorf("%s: %d %s; want %d saying %q", c.name, status, body, c.status, c.want)
			}
		}
		got, err := st.JobMetrics(context.Background(), store.JobMetricFilter{JobID: w.jobs[0].ID})
		if err != nil || len(got) != 6 {
			t.Errorf("job 0 holds %d points, %v; want the 6 of the good batch alone", len(got), err)
		}
		if other, _ := st.JobMetrics(context.Background(), store.JobMetricFilter{JobID: w.jobs[1].ID}); len(other) != 0 {
			t.Errorf("another job's token stored %d points on job 1", len(other))
		}
		evs, err := st.AuditEventsAfter(context.Background(), store.AuditFilter{}, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{}
		for _, e := range evs {
			counts[e.Action]++
		}
		if counts["job_token.refused"] != 3 || counts["job.checkpointed"] != 1 {
			t.Errorf("audit = %v; want the 3 refused tokens and the one checkpoint, not the points", counts)
		}
	})
}

// An agent that lost the lease answer carrying a job token gets a new one over the
// agent protocol, only for an attempt it has not started, only with its credential.
func TestAgentJobTokenReissue(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		w := newJobWorld(t, st)
		post := func(credential, body string) (int, string) {
			req, _ := http.NewRequest(http.MethodPost, w.srv.URL+agentapi.PathJobToken, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+credential)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return res.StatusCode, string(b)
		}
		ref := func(id int64) string { return fmt.Sprintf(`{"job_id": %d, "attempt": 1, "replica": 0}`, id) }
		status, body := post(w.credential, ref(w.pending.ID))
		var got agentapi.JobTokenResponse
		if err := json.Unmarshal([]byte(body), &got); status != http.StatusOK || err != nil || !strings.HasPrefix(got.JobToken, dispatch.JobTokenPrefix) {
			t.Fatalf("reissue for a pending attempt = %d %s", status, body)
		}
		// The token holds: the attempt is scheduled, its process may report already.
		req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/v1/jobs/%d/metrics", w.srv.URL, w.pending.ID), strings.NewReader(`{"points": [{"step": 1, "values": {"loss": 1}}]}`))
		req.Header.Set("Authorization", "Bearer "+got.JobToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("metrics with the reissued token of a job whose start is not reported = %d, want 200", res.StatusCode)
		}
		for _, c := range []struct {
			name, credential, body string
			status                 int
			want                   string
		}{
			{"started attempt", w.credential, ref(w.jobs[0].ID), 409, "has started"},
			{"no such attempt", w.credential, `{"job_id": 999, "attempt": 1, "replica": 0}`, 409, "stale_attempt"},
			{"wrong credential", "gnc_forged", ref(w.pending.ID), 401, "unauthorized"},
			{"no attempt", w.credential, fmt.Sprintf(`{"job_id": %d}`, w.pending.ID), 400, `"field":"attempt"`},
			{"not JSON", w.credential, `{"job_id":`, 400, `"field":"body"`},
		} {
			if status, body := post(c.credential, c.body); status != c.status || !strings.Contains(body, c.want) {
				t.Errorf("%s: %d %s; want %d with %s", c.name, status, body, c.status, c.want)
			}
		}
	})
}
