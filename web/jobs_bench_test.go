package web_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/scheduler"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web"
)

// Size of the benchmark's installation.
const (
	benchJobs        = 100_000
	benchNodes       = 1_000
	benchGPUsPerNode = 8
	benchUsers       = 200
	benchProjects    = 20
)

// BenchmarkJobsList loads the jobs page and GET /api/v1/jobs over loopback with 100,000
// jobs and 1,000 nodes in the database, on SQLite and PostgreSQL, next to a bare
// GET /healthz in the same run as the ceiling. Each target is hit by 8 concurrent
// clients with keep-alive; it reports p50/p99 latency, requests per second and the
// rate as a share of healthz's (goal: the jobs page at 25% or more, p99 under 50 ms),
// the CPU a request of this process, and of a PostgreSQL server on this machine.
// Last, it drops the list's indexes (migrations 0009, 0013, 0027-0029, 0034) and loads the first and a deep page again,
// to show what they are worth.
//
//	go test ./web/ -run '^$' -bench BenchmarkJobsList -benchtime 3s
func BenchmarkJobsList(b *testing.B) {
	collectAsServed(b)
	for _, backend := range storetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			cfg := backend.Config(b)
			st := storetest.Open(b, cfg)
			w := newBenchWorld(b, st, cfg)
			healthz := 0.0
			run := func(target benchTarget) {
				b.Run(target.name, func(b *testing.B) {
					rate := w.load(b, target)
					if target.name == "healthz" {
						healthz = rate
					} else if healthz > 0 {
						b.ReportMetric(100*rate/healthz, "%healthz")
					}
				})
			}
			targets := w.targets()
			for _, target := range targets {
				run(target)
			}
			submitted := "jobs_submitted"
			if backend.Name == "sqlite" {
				submitted = "jobs_submitted_brief"
			}
			for _, index := range []string{submitted, "jobs_project_submitted", "jobs_user_submitted", "jobs_state_submitted",
				"jobs_image_submitted", "jobs_image_ref_submitted", "jobs_name", "jobs_gpus", "jobs_project_name", "jobs_project_gpus",
				"jobs_project_state_submitted", "jobs_project_state_name", "jobs_project_state_gpus", "jobs_state_name", "jobs_state_gpus",
				"jobs_user_name", "jobs_user_gpus", "jobs_image_name", "jobs_image_gpus", "jobs_image_ref_name", "jobs_image_ref_gpus"} {
				storetest.Exec(b, cfg, "DROP INDEX "+index)
			}
			for _, target := range []benchTarget{targets[1], targets[4]} {
				target.name = "without-list-indexes/" + target.name
				run(target)
			}
		})
	}
}

// collectAsServed sets the garbage collector as `gantry serve` does (web.TuneGC) for
// the benchmark's time: its server shares this process.
func collectAsServed(b *testing.B) {
	_, restore := web.TuneGC(os.Getenv, web.CgroupMemoryMax)
	b.Cleanup(restore)
}

// benchWorld is a served installation with the jobs of a busy year.
type benchWorld struct {
	// postmaster is the process of the PostgreSQL server of the store when it runs
	// on this machine (0 otherwise), whose own CPU each target then reports too.
	postmaster int
	srv        *httptest.Server
	client     *http.Client
	session    string // admin's session cookie
	csrf       string
	token      string // admin's API token
	member     string // API token of a member of one project
	members    string // API token of a member of three projects
	deep       string // cursor 20,000 jobs into the list
}

type benchTarget struct {
	name, path string
	header     map[string]string
}

func (w *benchWorld) targets() []benchTarget {
	admin := map[string]string{"Authorization": "Bearer " + w.token}
	page := map[string]string{"Cookie": handlers.SessionCookie + "=" + w.session}
	return []benchTarget{
		{"healthz", "/healthz", nil},
		{"jobs-page", "/jobs", page},
		{"jobs-page-filtered", "/jobs?state=failed&project=project-07&sort=name", page},
		{"api-jobs", "/api/v1/jobs", admin},
		{"api-jobs-deep-page", "/api/v1/jobs?cursor=" + w.deep, admin},
		{"api-jobs-member", "/api/v1/jobs?state=running,queued", map[string]string{"Authorization": "Bearer " + w.member}},
		{"api-jobs-member-projects", "/api/v1/jobs?sort=name", map[string]string{"Authorization": "Bearer " + w.members}},
		{"jobs-page-state", "/jobs?state=succeeded&sort=name", page},
	}
}

func newBenchWorld(b *testing.B, st *store.Store, cfg store.Config) *benchWorld {
	b.Helper()
	ctx := context.Background()
	opts := identity.Options{BcryptCost: bcrypt.MinCost}
	al := audit.New(st, time.Now)
	az := authz.New(st, al)
	id := identity.New(st, al, az, time.Now, opts)
	if _, err := id.Bootstrap(ctx); err != nil {
		b.Fatal(err)
	}
	admin, err := st.UserByUsername(ctx, "admin")
	if err != nil {
		b.Fatal(err)
	}
	var users, projects []int64
	for i := range benchUsers {
		u := &models.User{Username: fmt.Sprintf("user-%03d", i)}
		if err := st.CreateUser(ctx, u); err != nil {
			b.Fatal(err)
		}
		users = append(users, u.ID)
	}
	for i := range benchProjects {
		tm := &models.Team{Name: fmt.Sprintf("team-%02d", i)}
		if err := st.CreateTeam(ctx, tm); err != nil {
			b.Fatal(err)
		}
		p := &models.Project{TeamID: tm.ID, Name: fmt.Sprintf("project-%02d", i)}
		if err := st.CreateProject(ctx, p); err != nil {
			b.Fatal(err)
		}
		projects = append(projects, p.ID)
	}
	member, err := st.UserByID(ctx, users[7])
	if err != nil {
		b.Fatal(err)
	}
	p7, err := st.ProjectByID(ctx, projects[7])
	if err != nil {
		b.Fatal(err)
	}
	if err := az.SetProjectRole(ctx, member, p7, models.RoleMember); err != nil {
		b.Fatal(err)
	}
	members, err := st.UserByID(ctx, users[8])
	if err != nil {
		b.Fatal(err)
	}
	for _, i := range []int{3, 11, 16} {
		p, err := st.ProjectByID(ctx, projects[i])
		if err != nil {
			b.Fatal(err)
		}
		if err := az.SetProjectRole(ctx, members, p, models.RoleMember); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	db, err := storetest.SQL(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	seedBenchRows(b, db, cfg.DatabaseURL != "", users, projects)
	b.Logf("seeded %d jobs and %d nodes in %s", benchJobs, benchNodes, time.Since(start).Round(time.Millisecond))

	w := &benchWorld{}
	if cfg.DatabaseURL != "" {
		w.postmaster = localPostmaster(b, db)
	}
	// A dispatcher as the server has one (its loop not running): the cluster page reads
	// the fleet's GPUs as its scheduling passes keep them.
	sched, err := scheduler.New(scheduler.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	disp, err := dispatch.New(dispatch.Deps{Store: st, Scheduler: dispatch.NewPlacer(sched), Audit: al, Now: time.Now, Log: log}, dispatch.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	w.srv = httptest.NewServer(web.NewRouter(web.Config{Store: st, Version: "bench", Log: log, Auth: opts, Dispatch: disp}))
	b.Cleanup(w.srv.Close)
	w.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	cookie, sess, err := id.StartSession(ctx, admin, "", "bench")
	if err != nil {
		b.Fatal(err)
	}
	w.session, w.csrf = cookie, sess.CSRFToken
	if w.token, _, err = id.CreateToken(ctx, admin, "bench", identity.ScopeRead, 24*time.Hour); err != nil {
		b.Fatal(err)
	}
	if w.member, _, err = id.CreateToken(ctx, member, "bench", identity.ScopeRead, 24*time.Hour); err != nil {
		b.Fatal(err)
	}
	if w.members, _, err = id.CreateToken(ctx, members, "bench", identity.ScopeRead, 24*time.Hour); err != nil {
		b.Fatal(err)
	}
	cursor := ""
	for range 100 {
		var page struct {
			Jobs       []json.RawMessage `json:"jobs"`
			NextCursor string            `json:"next_cursor"`
		}
		body := w.get(b, "/api/v1/jobs?limit=200&cursor="+cursor, map[string]string{"Authorization": "Bearer " + w.token})
		if err := json.Unmarshal(body, &page); err != nil || len(page.Jobs) != 200 {
			b.Fatalf("walk to a deep page: %v, %d jobs", err, len(page.Jobs))
		}
		cursor = page.NextCursor
	}
	w.deep = cursor
	for _, t := range w.targets() {
		if body := w.get(b, t.path, t.header); len(body) == 0 {
			b.Fatalf("%s answers nothing", t.path)
		}
	}
	return w
}

// get makes one request that must answer 200.
func (w *benchWorld) get(b *testing.B, path string, header map[string]string) []byte {
	b.Helper()
	req, _ := http.NewRequest(http.MethodGet, w.srv.URL+path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := w.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		b.Fatalf("GET %s = %d %.300s", path, res.StatusCode, body)
	}
	return body
}

// benchClients is how many clients load a target at once, whatever GOMAXPROCS is.
const benchClients = 8

// load sends b.N requests to t from benchClients clients and reports latency and rate.
func (w *benchWorld) load(b *testing.B, t benchTarget) float64 {
	var mu sync.Mutex
	var all []time.Duration
	// RunParallel starts parallelism × GOMAXPROCS goroutines: 8 whether the benchmark
	// has one CPU (PostgreSQL on the other) or two.
	b.SetParallelism((benchClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	cpu := processCPU(b)
	pgCPU := localPostgresCPU(w.postmaster)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodGet, w.srv.URL+t.path, nil)
			for k, v := range t.header {
				req.Header.Set(k, v)
			}
			began := time.Now()
			res, err := w.client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, err = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if err != nil || res.StatusCode != http.StatusOK {
				b.Errorf("GET %s = %d, %v", t.path, res.StatusCode, err)
				return
			}
			mine = append(mine, time.Since(began))
		}
		mu.Lock()
		all = append(all, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	if len(all) == 0 {
		return 0
	}
	// CPU per request (server and load generator together) does not depend on what
	// else the machine runs, unlike rates on a shared box: the ratio of two targets'
	// CPU per request is the ratio their rates would have on a machine of their own.
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(len(all)), "cpu-µs/op")
	// PostgreSQL's backends run on the same cores when the server is local: what they
	// spend a request bounds the rate as much as this process does.
	if w.postmaster != 0 {
		b.ReportMetric(float64((localPostgresCPU(w.postmaster)-pgCPU).Microseconds())/float64(len(all)), "pg-cpu-µs/op")
	}
	slices.Sort(all)
	rate := float64(len(all)) / b.Elapsed().Seconds()
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(rate, "req/s")
	return rate
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// localPostmaster is the process id of the PostgreSQL server that db is connected
// to when it runs on this machine, or 0: the parent of db's backend.
func localPostmaster(b *testing.B, db *sql.DB) int {
	var backend int
	if err := db.QueryRow("SELECT pg_backend_pid()").Scan(&backend); err != nil {
		b.Fatal(err)
	}
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", backend)); err != nil || strings.TrimSpace(string(comm)) != "postgres" {
		return 0
	}
	parent, _, ok := procStat(backend)
	if !ok {
		return 0
	}
	return parent
}

// localPostgresCPU is the CPU time, user and system, of the PostgreSQL server whose
// process is postmaster: that process and its children (backends, writers, vacuum;
// what another client of the same server runs meanwhile counts too, another server
// does not).
func localPostgresCPU(postmaster int) time.Duration {
	if postmaster == 0 {
		return 0
	}
	_, cpu, _ := procStat(postmaster)
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return cpu
	}
	for _, stat := range stats {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
		if err != nil {
			continue
		}
		if parent, used, ok := procStat(pid); ok && parent == postmaster {
			cpu += used
		}
	}
	return cpu
}

// procStat reads process pid's parent and CPU time, user and system, from
// /proc/PID/stat, which counts in clock ticks, 100 a second on Linux.
func procStat(pid int) (parent int, cpu time.Duration, ok bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// The fields after the name, which is in parentheses (and may hold some): the
	// parent is the 2nd of them, utime and stime the 12th and 13th.
	end := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[end+1:]))
	if end < 0 || len(fields) < 13 {
		return 0, 0, false
	}
	parent, err1 := strconv.Atoi(fields[1])
	user, err2 := strconv.ParseInt(fields[11], 10, 64)
	system, err3 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	return parent, time.Duration(user+system) * 10 * time.Millisecond, true
}

// seedBenchRows writes the nodes and jobs in batches, behind the store's back: through
// the store they would take minutes. Jobs spread over a year, across projects and users,
// mostly finished, as on a busy cluster.
func seedBenchRows(b *testing.B, db *sql.DB, postgres bool, users, projects []int64) {
	b.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	insert := func(table string, cols []string, n int, row func(i int) []any) {
		const batch = 500
		for lo := 0; lo < n; lo += batch {
			var q strings.Builder
			fmt.Fprintf(&q, "INSERT INTO %s (%s) VALUES ", table, strings.Join(cols, ", "))
			var args []any
			for i := lo; i < min(lo+batch, n); i++ {
				if i > lo {
					q.WriteString(", ")
				}
				q.WriteString("(")
				for c := range cols {
					if c > 0 {
						q.WriteString(", ")
					}
					if postgres {
						fmt.Fprintf(&q, "$%d", len(args)+c+1)
					} else {
						q.WriteString("?")
					}
				}
				q.WriteString(")")
				args = append(args, row(i)...)
			}
			if _, err := db.Exec(q.String(), args...); err != nil {
				b.Fatalf("seed %s: %v", table, err)
			}
		}
	}
	insert("nodes", []string{"name", "state", "cpu_milli", "memory_mib", "driver_version", "runtime", "created_at", "updated_at"}, benchNodes,
		func(i int) []any {
			return []any{fmt.Sprintf("gpu-%04d", i), models.NodeReady, int64(96000), int64(1 << 20), "550.54.15", "process", now, now}
		})
	// Eight GPUs a node, each with a reading: what the cluster page draws on a real fleet.
	// The readings are an hour ahead of the seed, so that a long run still shows them as
	// the latest (the page shows readings of the last two minutes).
	nodeIDs := seededIDs(b, db, "SELECT id FROM nodes ORDER BY id")
	uuid := func(i int) string { return fmt.Sprintf("GPU-bench-%04d-%d", i/benchGPUsPerNode, i%benchGPUsPerNode) }
	insert("gpu_devices", []string{"node_id", "idx", "uuid", "model", "memory_mib", "healthy", "created_at", "updated_at"}, len(nodeIDs)*benchGPUsPerNode,
		func(i int) []any {
			return []any{nodeIDs[i/benchGPUsPerNode], i % benchGPUsPerNode, uuid(i), "H100-80GB", int64(81559), true, now, now}
		})
	insert("telemetry_samples", []string{"node_id", "device_uuid", "at", "resolution", "util_pct", "mem_used_mib", "temp_c", "samples", "reported"},
		len(nodeIDs)*benchGPUsPerNode, func(i int) []any {
			return []any{nodeIDs[i/benchGPUsPerNode], uuid(i), now.Add(time.Hour), models.ResolutionRaw, float64(i % 101), int64(i % 81559), float64(40 + i%40), 1,
				models.ReportedUtil | models.ReportedMemory | models.ReportedTemperature}
		})
	states := []string{
		models.JobSucceeded, models.JobSucceeded, models.JobSucceeded, models.JobSucceeded, models.JobSucceeded,
		models.JobSucceeded, models.JobSucceeded, models.JobFailed, models.JobCancelled, models.JobRunning,
		models.JobQueued, models.JobQueued, models.JobHeld,
	}
	cols := []string{"name", "project_id", "user_id", "image_ref", "command", "gpus", "cpu_milli", "memory_mib", "priority_class",
		"state", "state_reason", "attempt", "submitted_at", "started_at", "finished_at", "created_at", "updated_at"}
	insert("jobs", cols, benchJobs, func(i int) []any {
		submitted := now.Add(-time.Duration(benchJobs-i) * 5 * time.Minute)
		state := states[i%len(states)]
		var started, finished any
		if state != models.JobQueued && state != models.JobHeld {
			started = submitted.Add(time.Minute)
		}
		if models.IsTerminal(state) {
			finished = submitted.Add(time.Hour)
		}
		return []any{
			fmt.Sprintf("train-%06d", i), projects[i%len(projects)], users[(i/3)%len(users)], "nvcr.io/nvidia/pytorch:24.07-py3",
			`["python","train.py"]`, i % 9, int64(4000), int64(32768), "research", state, state, 1, submitted, started, finished, submitted, submitted,
		}
	})
	// Each running job holds one GPU, the k-th of them the k-th GPU of the fleet: what the
	// pages that count what runs (cluster, quotas, nodes) read.
	running := seededIDs(b, db, "SELECT id FROM jobs WHERE state = 'running' ORDER BY id")
	insert("allocations", []string{"job_id", "attempt", "replica", "node_id", "devices", "gpu_milli", "cpu_milli", "memory_mib", "state",
		"started_at", "created_at", "updated_at"}, min(len(running), len(nodeIDs)*benchGPUsPerNode), func(k int) []any {
		return []any{running[k], 1, 0, nodeIDs[k/benchGPUsPerNode], `[{"uuid":"` + uuid(k) + `","milli":1000}]`, int64(1000), int64(4000), int64(32768),
			models.AllocRunning, now, now, now}
	})
	if postgres {
		// As autovacuum would soon after a load like this one; SQLite is left without
		// statistics, as Gantry leaves it.
		if _, err := db.Exec("ANALYZE"); err != nil {
			b.Fatal(err)
		}
	}
}

// seededIDs reads the ids that query selects from the seeded database.
func seededIDs(b *testing.B, db *sql.DB, query string) []int64 {
	b.Helper()
	rows, err := db.Query(query)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return ids
}
