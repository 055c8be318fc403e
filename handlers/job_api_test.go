package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/pools"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

type kicks struct{ n atomic.Int32 }

func (k *kicks) Kick() { k.n.Add(1) }

// jobAPI serves the job routes with user signed in (nil: nobody).
func jobAPI(t *testing.T, st *store.Store, user *models.User, k *kicks) *httptest.Server {
	t.Helper()
	gin.SetMode(gin.ReleaseMode)
	h := handlers.New(st, "test", slog.New(slog.NewTextHandler(io.Discard, nil)), handlers.Services{
		Jobs: jobs.New(st, audit.New(st, time.Now), k, nil),
	})
	r := gin.New()
	r.Use(func(c *gin.Context) {
		if user != nil {
			c.Set(handlers.UserKey, user)
		}
	})
	r.POST("/api/v1/jobs", h.JobCreate)
	r.GET("/api/v1/jobs/:id", h.JobShow)
	r.GET("/api/v1/jobs/:id/logs", h.JobLogs)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv
}

// submitter makes user ada, and team vision with project p in it: who submits in the
// job API's tests.
func submitter(t *testing.T, st *store.Store, p *models.Project) *models.User {
	t.Helper()
	ctx := context.Background()
	user := &models.User{Username: "ada"}
	team := &models.Team{Name: "vision"}
	if err := st.CreateUser(ctx, user); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTeam(ctx, team); err != nil {
		t.Fatal(err)
	}
	p.TeamID = team.ID
	if err := st.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	return user
}

type apiErr struct {
	Error handlers.APIError `json:"error"`
}

func TestJobAPI(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		user := submitter(t, st, &models.Project{Name: "default"})
		k := &kicks{}
		srv := jobAPI(t, st, user, k)
		post := func(body string) (int, []byte) {
			res, err := http.Post(srv.URL+"/api/v1/jobs", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return res.StatusCode, b
		}
		status, body := post(`{"project": "default", "name": "train-1", "kind": "inference", "command": ["python", "train.py"], "env": {"K": "V"},
			"resources": {"gpus": 1, "gpu_milli": 0, "gpu_memory_mib": 0, "gpu_model": "", "mig_profile": "", "cpu_milli": 2000, "memory_mib": 8192, "scratch_mib": 0},
			"priority_class": "research", "preemptible": true, "spot": false, "max_retries": 2}`)
		var job struct {
			ID          int64
			State       string
			Kind        string
			Project     string
			Command     []string
			Env         map[string]string
			MaxRetries  int `json:"max_retries"`
			Preemptible bool
			Resources   jobs.Resources
			Events      []struct{ To, Reason string }
		}
		if err := json.Unmarshal(body, &job); status != http.StatusCreated || err != nil || job.ID == 0 || job.State != models.JobQueued || job.Kind != models.KindInference ||
			job.Project != "default" || job.Command[1] != "train.py" || job.Env["K"] != "V" || job.Resources.MemoryMiB != 8192 || job.MaxRetries != 2 {
			t.Fatalf("submit = %d %s", status, body)
		}
		if k.n.Load() != 1 {
			t.Errorf("dispatch woken %d times, want once", k.n.Load())
		}

		cases := []struct{ name, body, field string }{
			{"no command", `{"project": "default", "name": "x"}`, "command"},
			{"env name with =", `{"project": "default", "name": "x", "command": ["a"], "env": {"A=B": "1"}}`, "env"},
			{"reserved env", `{"project": "default", "name": "x", "command": ["a"], "env": {"CUDA_VISIBLE_DEVICES": "0"}}`, "env.CUDA_VISIBLE_DEVICES"},
			{"negative memory", `{"project": "default", "name": "x", "command": ["a"], "resources": {"memory_mib": -1}}`, "resources.memory_mib"},
			{"NVLink of one GPU", `{"project": "default", "name": "x", "command": ["a"], "resources": {"gpus": 1, "nvlink": true}}`, "resources.nvlink"},
			{"unknown field", `{"project": "default", "name": "x", "command": ["a"], "gpus": 2}`, "gpus"},
			{"wrong type", `{"project": "default", "name": "x", "command": "python train.py"}`, "command"},
			{"argument not a string", `{"project": "default", "name": "x", "command": ["python", 3]}`, "command[1]"},
			{"env value not a string", `{"project": "default", "name": "x", "command": ["a"], "env": {"K": "V", "A": 1}}`, "env.A"},
			{"env value of the wrong form", `{"project": "default", "name": "x", "command": ["a"], "env": {"A": {"value": 1, "secret": true}}}`, "env.A"},
			{"gpus not a number", `{"project": "default", "name": "x", "command": ["a"], "resources": {"gpus": "2"}}`, "resources.gpus"},
			{"unknown project", `{"project": "nope", "name": "x", "command": ["a"]}`, "project"},
			{"unknown kind", `{"project": "default", "name": "x", "command": ["a"], "kind": "serving"}`, "kind"},
			{"unknown class", `{"project": "default", "name": "x", "command": ["a"], "priority_class": "urgent"}`, "priority_class"},
			{"custom image not allowed", `{"project": "default", "name": "x", "command": ["a"], "image": "docker.io/me/mine:1"}`, "image"},
			{"huge command", `{"project": "default", "name": "x", "command": ["` + strings.Repeat("a", 70_000) + `"]}`, "command"},
			{"body over 1 MiB", `{"project": "default", "name": "x", "command": ["` + strings.Repeat("a", 2<<20) + `"]}`, "body"},
			{"invalid UTF-8", "{\"project\": \"default\", \"name\": \"x\", \"command\": [\"\xff\"]}", "body"},
			{"not JSON", `project=default`, "body"},
			{"share of two GPUs", `{"project": "default", "name": "x", "command": ["a"], "resources": {"gpus": 2, "gpu_milli": 250}}`, "resources.gpu_milli"},
		}
		for _, tc := range cases {
			status, body := post(tc.body)
			var e apiErr
			if json.Unmarshal(body, &e) != nil || status != http.StatusBadRequest || e.Error.Field != tc.field || e.Error.Message == "" || e.Error.Code != "invalid" {
				t.Errorf("%s: %d %.300s, want 400 naming %s", tc.name, status, body, tc.field)
			}
		}
		if n, _ := st.Jobs(ctx, store.JobFilter{}); len(n) != 1 {
			t.Errorf("bad submissions stored jobs: %d jobs", len(n))
		}

		get := func(path string) (int, []byte, http.Header) {
			res, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return res.StatusCode, b, res.Header
		}
		status, body, _ = get("/api/v1/jobs/1")
		if err := json.Unmarshal(body, &job); status != 200 || err != nil || len(job.Events) != 1 || job.Events[0].Reason != "submitted" {
			t.Fatalf("GET job = %d %s", status, body)
		}
		for path, want := range map[string]int{"/api/v1/jobs/99": 404, "/api/v1/jobs/x": 400, "/api/v1/jobs/1/logs?stream=stdin": 400, "/api/v1/jobs/1/logs?attempt=5": 400, "/api/v1/jobs/1/logs?follow=yes": 400} {
			if status, body, _ := get(path); status != want {
				t.Errorf("GET %s = %d %s, want %d", path, status, body, want)
			}
		}
		chunks := []models.JobLogChunk{
			{JobID: job.ID, Attempt: 1, Stream: "stdout", Offset: 0, Data: []byte("epoch 1\n")},
			{JobID: job.ID, Attempt: 1, Stream: "stderr", Offset: 0, Data: []byte("warn\n")},
			{JobID: job.ID, Attempt: 1, Stream: "stdout", Offset: 8, Data: []byte("epoch 2\n")},
		}
		for i := range chunks {
			if err := st.CreateLogChunk(ctx, &chunks[i]); err != nil {
				t.Fatal(err)
			}
		}
		// The job has not run: attempt 0 has no output.
		if status, body, hdr := get("/api/v1/jobs/1/logs"); status != 200 || len(body) != 0 || hdr.Get("X-Gantry-Attempt-Ended") != "false" {
			t.Fatalf("logs of a job that never ran = %d %q, ended %q", status, body, hdr.Get("X-Gantry-Attempt-Ended"))
		}
		if err := st.TransitionJob(ctx, job.ID, store.Transition{From: models.JobQueued, To: models.JobScheduled, Attempt: 1}); err != nil {
			t.Fatal(err)
		}
		status, body, hdr := get("/api/v1/jobs/1/logs")
		if status != 200 || string(body) != "epoch 1\nwarn\nepoch 2\n" || hdr.Get("X-Gantry-Attempt") != "1" {
			t.Fatalf("logs = %d %q %v", status, body, hdr)
		}
		if _, body, _ := get("/api/v1/jobs/1/logs?stream=stdout&after=" + hdr.Get("X-Gantry-Log-Cursor")); len(body) != 0 {
			t.Errorf("logs after the cursor = %q, want nothing new", body)
		}
		if _, body, _ := get("/api/v1/jobs/1/logs?stream=stderr"); string(body) != "warn\n" {
			t.Errorf("stderr = %q", body)
		}

		// Output of many pages comes whole in one answer, its length said first (an
		// answer ended at 8 MiB, or at 1,000 chunks, whichever came later).
		offset, want := int64(16), []byte("epoch 1\nwarn\nepoch 2\n")
		for i := range 1001 {
			c := models.JobLogChunk{JobID: job.ID, Attempt: 1, Stream: "stdout", Offset: offset, Data: bytes.Repeat([]byte{byte('a' + i%26)}, 9<<10)}
			if err := st.CreateLogChunk(ctx, &c); err != nil {
				t.Fatal(err)
			}
			offset += int64(len(c.Data))
			want = append(want, c.Data...)
		}
		status, body, hdr = get("/api/v1/jobs/1/logs")
		if status != 200 || !bytes.Equal(body, want) || hdr.Get("Content-Length") != strconv.Itoa(len(want)) {
			t.Errorf("8.8 MiB of output in 1,004 chunks = %d, %d bytes (Content-Length %s); want all %d", status, len(body), hdr.Get("Content-Length"), len(want))
		}
		cursor := hdr.Get("X-Gantry-Log-Cursor")
		if _, body, hdr := get("/api/v1/jobs/1/logs?after=" + cursor); len(body) != 0 || hdr.Get("X-Gantry-Log-Cursor") != cursor {
			t.Errorf("after the last cursor: %d bytes, cursor %s; want none and the same cursor %s", len(body), hdr.Get("X-Gantry-Log-Cursor"), cursor)
		}
	})
}

func TestJobAPINeedsAUser(t *testing.T) {
	st := storetest.Open(t, storetest.Backends()[0].Config(t))
	srv := jobAPI(t, st, nil, &kicks{})
	res, err := http.Post(srv.URL+"/api/v1/jobs", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous submit = %d, want 401", res.StatusCode)
	}
}

// A followed log streams output as it arrives and ends when the attempt ends.
func TestJobLogsFollow(t *testing.T) {
	st := storetest.Open(t, storetest.Backends()[0].Config(t))
	ctx := context.Background()
	p := &models.Project{Name: "default"}
	user := submitter(t, st, p)
	j := &models.Job{Name: "train", ProjectID: p.ID, UserID: user.ID, Command: `["true"]`, PriorityClass: "research"}
	if err := st.CreateJob(ctx, j, "user:ada"); err != nil {
		t.Fatal(err)
	}
	n := &models.Node{Name: "gpu-1", State: models.NodeReady}
	if err := st.SaveNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	srv := jobAPI(t, st, user, &kicks{})
	body := make(chan string, 1)
	go func() {
		res, err := http.Get(srv.URL + "/api/v1/jobs/" + strconv.FormatInt(j.ID, 10) + "/logs?follow=true")
		if err != nil {
			t.Error(err)
			body <- ""
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		body <- res.Header.Get("X-Gantry-Attempt") + "|" + string(b)
	}()
	// The job starts after the client began to follow.
	time.Sleep(300 * time.Millisecond)
	if err := st.TransitionJob(ctx, j.ID, store.Transition{From: models.JobQueued, To: models.JobScheduled, Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateAllocations(ctx, []models.Allocation{{JobID: j.ID, Attempt: 1, NodeID: n.ID, State: models.AllocRunning}}); err != nil {
		t.Fatal(err)
	}
	for i, line := range []string{"epoch 1\n", "epoch 2\n"} {
		c := models.JobLogChunk{JobID: j.ID, Attempt: 1, Stream: "stdout", Offset: int64(i * 8), Data: []byte(line)}
		if err := st.CreateLogChunk(ctx, &c); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	select {
	case got := <-body:
		t.Fatalf("the follow ended while the attempt runs: %q", got)
	default:
	}
	a, _ := st.AllocationByAttempt(ctx, j.ID, 1, 0)
	if err := st.UpdateAllocation(ctx, a.ID, []string{models.AllocRunning}, store.AllocationChange{State: models.AllocEnded}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-body:
		if got != "1|epoch 1\nepoch 2\n" {
			t.Fatalf("followed log = %q", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the follow did not end with its attempt")
	}
}

func TestJobCancelAPI(t *testing.T) {
	st := storetest.Open(t, storetest.Backends()[0].Config(t))
	ctx := context.Background()
	p := &models.Project{Name: "default"}
	user := submitter(t, st, p)
	al := audit.New(st, time.Now)
	d, err := dispatch.New(dispatch.Deps{Store: st, Scheduler: dispatchtest.FirstFit{}, Audit: al, Now: time.Now,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, dispatch.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	h := handlers.New(st, "test", slog.New(slog.NewTextHandler(io.Discard, nil)), handlers.Services{Dispatch: d, Jobs: jobs.New(st, al, d, pools.NewFitCheck(st, d))})
	r := gin.New()
	r.Use(func(c *gin.Context) { c.Set(handlers.UserKey, user) })
	r.POST("/api/v1/jobs/:id/cancel", h.JobCancel)
	srv := httptest.NewServer(r)
	defer srv.Close()
	j := &models.Job{Name: "train", ProjectID: p.ID, UserID: user.ID, Command: `["true"]`, PriorityClass: "research"}
	if err := st.CreateJob(ctx, j, "user:ada"); err != nil {
		t.Fatal(err)
	}
	cancel := func(id string) (int, string) {
		res, err := http.Post(srv.URL+"/api/v1/jobs/"+id+"/cancel", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	id := strconv.FormatInt(j.ID, 10)
	if status, body := cancel(id); status != 200 || !strings.Contains(body, `"state":"cancelled"`) || !strings.Contains(body, "cancelled by ada") {
		t.Fatalf("cancel = %d %s", status, body)
	}
	if status, body := cancel(id); status != http.StatusConflict || !strings.Contains(body, `"code":"finished"`) {
		t.Fatalf("second cancel = %d %s", status, body)
	}
	if status, _ := cancel("999"); status != http.StatusNotFound {
		t.Fatalf("cancel of no job = %d", status)
	}
}

// Secret variables are answered masked, named in secret_env, when submitted and when read.
func TestJobAPISecretEnv(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		user := submitter(t, st, &models.Project{Name: "default"})
		srv := jobAPI(t, st, user, &kicks{})
		res, err := http.Post(srv.URL+"/api/v1/jobs", "application/json", strings.NewReader(`{"project": "default", "name": "train", "command": ["a"],
			"env": {"EPOCHS": "3", "HF_TOKEN": "hf_abc123", "DB_URL": {"value": "postgres://u:pw77@db", "secret": true}}}`))
		if err != nil {
			t.Fatal(err)
		}
		created, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var job struct {
			ID        int64
			Env       map[string]string
			SecretEnv []string `json:"secret_env"`
		}
		if err := json.Unmarshal(created, &job); res.StatusCode != http.StatusCreated || err != nil {
			t.Fatalf("submit = %d %s", res.StatusCode, created)
		}
		res, err = http.Get(srv.URL + "/api/v1/jobs/" + strconv.FormatInt(job.ID, 10))
		if err != nil {
			t.Fatal(err)
		}
		shown, _ := io.ReadAll(res.Body)
		res.Body.Close()
		for what, body := range map[string][]byte{"the submit answer": created, "the job": shown} {
			job.Env, job.SecretEnv = nil, nil
			if err := json.Unmarshal(body, &job); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(body), "hf_abc123") || strings.Contains(string(body), "pw77") {
				t.Errorf("%s shows a secret value: %s", what, body)
			}
			if job.Env["EPOCHS"] != "3" || job.Env["HF_TOKEN"] != jobs.Masked || job.Env["DB_URL"] != jobs.Masked || strings.Join(job.SecretEnv, ",") != "DB_URL,HF_TOKEN" {
				t.Errorf("%s: env %v, secret_env %v", what, job.Env, job.SecretEnv)
			}
		}
	})
}

// A job route answers the job the gate loaded to find its project (handlers.JobKey),
// read once per request; without one it loads the job itself.
func TestJobHandedByTheGate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		user := submitter(t, st, &models.Project{Name: "default"})
		srv := jobAPI(t, st, user, &kicks{})
		res, err := http.Post(srv.URL+"/api/v1/jobs", "application/json", strings.NewReader(`{"project": "default", "name": "stored", "command": ["true"]}`))
		if err != nil {
			t.Fatal(err)
		}
		var stored struct{ ID int64 }
		err = json.NewDecoder(res.Body).Decode(&stored)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusCreated {
			t.Fatalf("submit = %d, %v", res.StatusCode, err)
		}
		loaded, err := st.JobByID(ctx, stored.ID)
		if err != nil {
			t.Fatal(err)
		}
		// What the gate read, told apart from the stored row by its name.
		loaded.Name = "as-the-gate-read-it"
		h := handlers.New(st, "test", slog.New(slog.NewTextHandler(io.Discard, nil)), handlers.Services{Jobs: jobs.New(st, audit.New(st, time.Now), &kicks{}, nil)})
		r := gin.New()
		r.Use(func(c *gin.Context) {
			c.Set(handlers.UserKey, user)
			c.Set(handlers.JobKey, loaded)
		})
		r.GET("/api/v1/jobs/:id", h.JobShow)
		gated := httptest.NewServer(r)
		t.Cleanup(gated.Close)
		for url, want := range map[string]string{gated.URL: "as-the-gate-read-it", srv.URL: "stored"} {
			res, err := http.Get(url + "/api/v1/jobs/" + strconv.FormatInt(stored.ID, 10))
			if err != nil {
				t.Fatal(err)
			}
			var job struct{ Name string }
			err = json.NewDecoder(res.Body).Decode(&job)
			res.Body.Close()
			if err != nil || res.StatusCode != http.StatusOK || job.Name != want {
				t.Errorf("GET = %d %q, %v; want %q", res.StatusCode, job.Name, err, want)
			}
		}
	})
}
