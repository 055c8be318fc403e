package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/scheduler"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web"
)

// dispatchSite is a site whose server dispatches with the production scheduler.
type dispatchSite struct {
	*site
	disp *dispatch.Service
}

func newDispatchSite(t *testing.T, st *store.Store) *dispatchSite {
	t.Helper()
	s := &site{t: t, st: st, clock: &testClock{t: time.Now().UTC()}}
	opts := identity.Options{BcryptCost: bcrypt.MinCost}
	al := audit.New(st, s.clock.now)
	s.az = authz.New(st, al)
	s.id = identity.New(st, al, s.az, s.clock.now, opts)
	var err error
	if s.password, err = s.id.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	sched, err := scheduler.New(scheduler.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	disp, err := dispatch.New(dispatch.Deps{Store: st, Scheduler: dispatch.NewPlacer(sched), Audit: al, Now: s.clock.now, Log: log}, dispatch.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewServer(web.NewRouter(web.Config{Store: st, Version: "v0.0.0-test", Log: log, Auth: opts, Now: s.clock.now, Dispatch: disp}))
	t.Cleanup(s.srv.Close)
	return &dispatchSite{site: s, disp: disp}
}

// join registers a node with simulated GPUs (spec as gpu.NewSimulated reads it); mutate
// changes what the inventory reports.
func (s *dispatchSite) join(name, spec string, mutate ...func(*gpu.Inventory)) {
	s.t.Helper()
	ctx := context.Background()
	token, _, err := dispatch.CreateJoinToken(ctx, s.st, audit.New(s.st, s.clock.now), s.clock.now(), dispatch.JoinTokenSpec{Name: "for-" + name, TTL: time.Hour})
	if err != nil {
		s.t.Fatal(err)
	}
	sim, err := gpu.NewSimulated(spec, name, s.clock.now)
	if err != nil {
		s.t.Fatal(err)
	}
	inv, err := sim.Discover(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, m := range mutate {
		m(&inv)
	}
	if _, err := s.disp.Join(ctx, agentapi.JoinRequest{JoinToken: token, Name: name, Runtime: agentapi.RuntimeProcess,
		CPUMilli: 16000, MemoryMiB: 65536, ScratchMiB: 100000, Inventory: inv}); err != nil {
		s.t.Fatal(err)
	}
}

// submit queues a job in project default through the API, as the admin: one GPU, or
// the resources object given.
func (s *dispatchSite) submit(bearer map[string]string, name string, resources ...string) int64 {
	s.t.Helper()
	want := `{"gpus": 1}`
	if len(resources) > 0 {
		want = resources[0]
	}
	res, body := s.send(s.browser(), "POST", "/api/v1/jobs",
		`{"project": "default", "name": "`+name+`", "command": ["python", "train.py"], "resources": `+want+`}`, bearer)
	var out struct{ ID int64 }
	if err := json.Unmarshal([]byte(body), &out); err != nil || res.StatusCode != http.StatusCreated {
		s.t.Fatalf("submit %s = %d %s", name, res.StatusCode, body)
	}
	return out.ID
}

// The quota set on the console reaches the scheduler: a team's job beyond it waits, and
// its explanation names the quota; the quotas page lists it with that reason.
func TestQuotaSetOnTheConsoleHoldsAJob(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		s := newDispatchSite(t, st)
		s.join("gpu-1", "2xA100-80GB")
		admin := s.signIn("admin", s.password)
		token := s.csrf(admin, "/admin/quotas")
		res, body := s.form(admin, token, "/admin/quotas", "team", "default", "gpu_model", "", "guaranteed", "1", "cohort", "", "borrowing_limit", "2")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Borrowing limit: borrowing needs a cohort") {
			t.Fatalf("borrowing without a cohort = %d", res.StatusCode)
		}
		res, body = s.form(admin, token, "/admin/quotas", "team", "default", "guaranteed", "one")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Guaranteed: &#34;one&#34; is not a number of GPUs") || !strings.Contains(body, `value="one"`) {
			t.Fatalf("a bad number = %d", res.StatusCode)
		}
		res, _ = s.form(admin, token, "/admin/quotas", "team", "default", "guaranteed", "1")
		wantStatus(t, "set a quota", res, http.StatusSeeOther)

		u, _ := st.UserByUsername(ctx, "admin")
		secret, _, err := s.id.CreateToken(ctx, u, "ci", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		bearer := map[string]string{"Authorization": "Bearer " + secret}
		first, second := s.submit(bearer, "first"), s.submit(bearer, "second")
		s.disp.Tick(ctx)
		var job struct {
			State         string
			PendingReason string `json:"pending_reason"`
		}
		_, body = s.send(s.browser(), "GET", "/api/v1/jobs/"+strconv.FormatInt(first, 10), "", bearer)
		if json.Unmarshal([]byte(body), &job); job.State != "scheduled" {
			t.Fatalf("the first job within the quota: %s", body)
		}
		_, body = s.send(s.browser(), "GET", "/api/v1/jobs/"+strconv.FormatInt(second, 10), "", bearer)
		if json.Unmarshal([]byte(body), &job); job.State != "queued" || !strings.Contains(job.PendingReason, "refused by quota (team default's GPU quota for any model is exhausted: 1/1 GPUs)") {
			t.Fatalf("the second job beyond the quota: %s", body)
		}
		_, body = s.send(admin, "GET", "/admin/quotas", "", nil)
		if !strings.Contains(body, `data-job="`+strconv.FormatInt(second, 10)+`"`) || !strings.Contains(body, "GPU quota for any model is exhausted") {
			t.Fatal("the quotas page does not list the waiting job with its reason")
		}
		if !strings.Contains(body, `<td data-testid="use">1 GPU`) {
			t.Error("the quotas page does not show the GPU in use")
		}
		if strings.Contains(body, `data-testid="waiting-more"`) {
			t.Error("the quotas page says more jobs wait than it lists; it lists the one that waits")
		}

		// Lowering the quota below the use is allowed, with a warning; the running job stays.
		res, _ = s.form(admin, token, "/admin/quotas", "team", "default", "guaranteed", "0.5")
		wantStatus(t, "quota below use", res, http.StatusSeeOther)
		loc, _ := url.QueryUnescape(res.Header.Get("Location"))
		if !strings.Contains(loc, "warning=default uses 1 GPU of any model now, more than the new guarantee of 0.5 GPUs. Running jobs keep running") {
			t.Fatalf("redirect after a quota below use: %s", loc)
		}
		_, body = s.send(admin, "GET", res.Header.Get("Location"), "", nil)
		if !strings.Contains(body, `data-testid="quota-warning"`) || !strings.Contains(body, "badge-over") {
			t.Error("the page shows neither the warning nor the over-use")
		}
		s.disp.Tick(ctx)
		_, body = s.send(s.browser(), "GET", "/api/v1/jobs/"+strconv.FormatInt(first, 10), "", bearer)
		if json.Unmarshal([]byte(body), &job); job.State != "scheduled" {
			t.Fatalf("a lower quota stopped a running job: %s", body)
		}

		// Past 20 waiting jobs the page lists the first 20 and says more wait.
		for i := range 20 {
			s.submit(bearer, fmt.Sprintf("more-%d", i))
		}
		body = s.mustGet(admin, "/admin/quotas")
		if n := strings.Count(body, "<tr data-job="); n != 20 || !strings.Contains(body, `data-testid="waiting-more">These are the first 20 in the queue's order; more wait.`) {
			t.Errorf("with 21 jobs waiting the page lists %d and says more wait: %v", n, strings.Contains(body, "waiting-more"))
		}
	})
}

// A CPU quota set on the console holds a job beyond its cores, with the CPU named; the
// page shows the cores in use; a lending limit above the guarantee is refused by field.
func TestCPUQuotaSetOnTheConsoleHoldsAJob(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		s := newDispatchSite(t, st)
		s.join("gpu-1", "2xA100-80GB")
		admin := s.signIn("admin", s.password)
		token := s.csrf(admin, "/admin/quotas")
		res, body := s.form(admin, token, "/admin/quotas", "team", "default", "guaranteed", "2", "cpu", "6", "cpu_lending_limit", "8")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "CPU lending limit: 8 cores is more than the guaranteed 6 cores") || !strings.Contains(body, `value="8"`) {
			t.Fatalf("lending more cores than guaranteed = %d", res.StatusCode)
		}
		if qs, _ := st.Quotas(ctx); len(qs) != 0 {
			t.Fatalf("a refused quota was saved: %+v", qs)
		}
		res, _ = s.form(admin, token, "/admin/quotas", "team", "default", "guaranteed", "2", "cpu", "6", "memory", "32")
		wantStatus(t, "set a CPU quota", res, http.StatusSeeOther)

		u, _ := st.UserByUsername(ctx, "admin")
		secret, _, err := s.id.CreateToken(ctx, u, "ci", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		bearer := map[string]string{"Authorization": "Bearer " + secret}
		four := `{"gpus": 1, "cpu_milli": 4000, "memory_mib": 4096}`
		first, second := s.submit(bearer, "first", four), s.submit(bearer, "second", four)
		s.disp.Tick(ctx)
		var job struct {
			State         string
			PendingReason string `json:"pending_reason"`
		}
		_, body = s.send(s.browser(), "GET", "/api/v1/jobs/"+strconv.FormatInt(first, 10), "", bearer)
		if json.Unmarshal([]byte(body), &job); job.State != "scheduled" {
			t.Fatalf("the first job within the CPU quota: %s", body)
		}
		_, body = s.send(s.browser(), "GET", "/api/v1/jobs/"+strconv.FormatInt(second, 10), "", bearer)
		if json.Unmarshal([]byte(body), &job); job.State != "queued" || !strings.Contains(job.PendingReason, "team default's CPU quota is exhausted: 4/6 cores, too little for 4 more") {
			t.Fatalf("the second job beyond the CPU quota: %s", body)
		}
		_, body = s.send(admin, "GET", "/admin/quotas", "", nil)
		for _, want := range []string{"6 cores", "4 cores in use", "32 GiB", "4 GiB in use", "CPU quota is exhausted"} {
			if !strings.Contains(body, want) {
				t.Errorf("the quotas page lacks %q", want)
			}
		}
		if strings.Contains(body, "not enforced") || strings.Contains(body, "the scheduler limits GPUs") {
			t.Error("the quotas page still says CPU and memory are not enforced")
		}
	})
}

// GET /api/v1/quotas shows anyone signed in what the cluster page shows: use no quota
// limits, then the quota set on the console with its limits and the use under it; a
// team filter keeps one team's and names an unknown team as the field at fault.
func TestQuotasThroughTheAPI(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		s := newDispatchSite(t, st)
		s.join("gpu-1", "2xA100-80GB")
		admin, err := st.UserByUsername(ctx, "admin")
		if err != nil {
			t.Fatal(err)
		}
		secret, _, err := s.id.CreateToken(ctx, admin, "ci", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		reader := &models.User{Username: "reader"}
		if err := st.CreateUser(ctx, reader); err != nil {
			t.Fatal(err)
		}
		readSecret, _, err := s.id.CreateToken(ctx, reader, "ci", identity.ScopeRead, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		asReader := map[string]string{"Authorization": "Bearer " + readSecret}
		type list struct {
			Quotas []struct {
				Team                   string
				GPUModel               string `json:"gpu_model"`
				Cohort                 string
				GPUNominalMilli        int64  `json:"gpu_nominal_milli"`
				GPUBorrowingLimitMilli *int64 `json:"gpu_borrowing_limit_milli"`
				GPULendingLimitMilli   *int64 `json:"gpu_lending_limit_milli"`
				GPUUseMilli            int64  `json:"gpu_use_milli"`
				GPUBorrowedMilli       int64  `json:"gpu_borrowed_milli"`
				CPUNominalMilli        int64  `json:"cpu_nominal_milli"`
			}
			Unlimited []struct {
				Team        string
				GPUModel    string `json:"gpu_model"`
				GPUUseMilli int64  `json:"gpu_use_milli"`
			}
		}
		get := func(query string) list {
			t.Helper()
			res, body := s.send(s.browser(), "GET", "/api/v1/quotas"+query, "", asReader)
			var l list
			if res.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &l) != nil || l.Quotas == nil || l.Unlimited == nil {
				t.Fatalf("GET /api/v1/quotas%s = %d %s", query, res.StatusCode, body)
			}
			return l
		}

		s.submit(map[string]string{"Authorization": "Bearer " + secret}, "first")
		s.disp.Tick(ctx)
		l := get("")
		if len(l.Quotas) != 0 || len(l.Unlimited) != 1 || l.Unlimited[0].Team != "default" || l.Unlimited[0].GPUModel != "A100-80GB" || l.Unlimited[0].GPUUseMilli != 1000 {
			t.Fatalf("before any quota: %+v", l)
		}

		browser := s.signIn("admin", s.password)
		token := s.csrf(browser, "/admin/quotas")
		res, body := s.form(browser, token, "/admin/quotas", "team", "default", "gpu_model", "", "guaranteed", "0.5", "cpu", "4")
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("set a quota = %d %s", res.StatusCode, body)
		}
		l = get("?team=default")
		if len(l.Quotas) != 1 || len(l.Unlimited) != 0 {
			t.Fatalf("after the quota: %+v", l)
		}
		q := l.Quotas[0]
		if q.Team != "default" || q.GPUModel != "" || q.Cohort != "" || q.GPUNominalMilli != 500 || q.GPUBorrowingLimitMilli != nil ||
			q.GPULendingLimitMilli != nil || q.GPUUseMilli != 1000 || q.GPUBorrowedMilli != 500 || q.CPUNominalMilli != 4000 {
			t.Errorf("the quota: %+v", q)
		}

		team := &models.Team{Name: "vision"}
		if err := st.CreateTeam(ctx, team); err != nil {
			t.Fatal(err)
		}
		if l := get("?team=vision"); len(l.Quotas) != 0 || len(l.Unlimited) != 0 {
			t.Errorf("a team without quota or use: %+v", l)
		}
		res, body = s.send(s.browser(), "GET", "/api/v1/quotas?team=nobody", "", asReader)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"field":"team"`) || !strings.Contains(body, `there is no team \"nobody\"`) {
			t.Errorf("an unknown team = %d %s", res.StatusCode, body)
		}
	})
}
