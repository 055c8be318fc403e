package web_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// BenchmarkJobPage is what an open job page costs: the page itself, and each refresh
// of its live part (every 2 s until the job ends), for a queued job and a running one
// with its events and allocation: a refresh that finds the part unchanged (204, most of
// them: the page counts a running job's run time on itself), and one that draws it
// (the version it names is old), on SQLite and PostgreSQL. Compare cpu-µs/op (server
// and client together, one request at a time).
//
//	go test ./web/ -run '^$' -bench BenchmarkJobPage -benchtime 2s
func BenchmarkJobPage(b *testing.B) {
	collectAsServed(b)
	for _, backend := range storetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			st := storetest.Open(b, backend.Config(b))
			s := buildJobSite(b, st)
			ctx := context.Background()
			admin, err := st.UserByUsername(ctx, "admin")
			if err != nil {
				b.Fatal(err)
			}
			session, _, err := s.id.StartSession(ctx, admin, "", "bench")
			if err != nil {
				b.Fatal(err)
			}
			token, _, err := s.id.CreateToken(ctx, admin, "bench", identity.ScopeWrite, 24*time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			page := map[string]string{"Cookie": handlers.SessionCookie + "=" + session}
			get := func(path string, header map[string]string, want int) string {
				req, _ := http.NewRequest(http.MethodGet, s.srv.URL+path, nil)
				for k, v := range header {
					req.Header.Set(k, v)
				}
				res, err := s.srv.Client().Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != want {
					b.Fatalf("GET %s = %d, want %d: %.300s", path, res.StatusCode, want, body)
				}
				return string(body)
			}

			req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/api/v1/jobs", strings.NewReader(
				`{"project": "default", "name": "bench", "command": ["python", "train.py"], "resources": {"gpus": 1, "cpu_milli": 2000, "memory_mib": 8192}}`))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			res, err := s.srv.Client().Do(req)
			if err != nil {
				b.Fatal(err)
			}
			var job struct{ ID int64 }
			err = json.NewDecoder(res.Body).Decode(&job)
			res.Body.Close()
			if err != nil || res.StatusCode != http.StatusCreated {
				b.Fatalf("submit = %d, %v", res.StatusCode, err)
			}
			path := "/jobs/" + strconv.FormatInt(job.ID, 10)
			htmx := map[string]string{"Cookie": page["Cookie"], "HX-Request": "true"}
			// shown is the version the live part names, as its refresh sends it.
			shown := func() string {
				m := shownVersion.FindStringSubmatch(get(path, htmx, http.StatusOK))
				if m == nil {
					b.Fatal("the live part names no version")
				}
				var vals struct{ Shown string }
				if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &vals); err != nil {
					b.Fatal(err)
				}
				return vals.Shown
			}
			measure := func(name, path string, header map[string]string, want int) {
				b.Run(name, func(b *testing.B) {
					cpu := processCPU(b)
					n := 0
					for b.Loop() {
						get(path, header, want)
						n++
					}
					b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(n), "cpu-µs/op")
				})
			}

			// Queued, the job stays as it is: its refresh is answered 204.
			measure("queued/page", path, page, http.StatusOK)
			measure("queued/live-part-unchanged", path+"?shown="+shown(), htmx, http.StatusNoContent)

			// Running, the part changes when the job, its allocations, events or cost do.
			join, _, err := dispatch.CreateJoinToken(ctx, st, s.audit, time.Now(), dispatch.JoinTokenSpec{Name: "gpu-a", TTL: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			sim, err := gpu.NewSimulated("2xA100-80GB", "gpu-a", time.Now)
			if err != nil {
				b.Fatal(err)
			}
			inv, err := sim.Discover(ctx)
			if err != nil {
				b.Fatal(err)
			}
			joined, err := s.disp.Join(ctx, agentapi.JoinRequest{JoinToken: join, Name: "gpu-a", Runtime: agentapi.RuntimeProcess, CPUMilli: 32000, MemoryMiB: 262144, Inventory: inv})
			if err != nil {
				b.Fatal(err)
			}
			node, err := s.disp.Authenticate(ctx, joined.Credential)
			if err != nil {
				b.Fatal(err)
			}
			s.disp.Tick(ctx)
			leases, err := s.disp.Leases(ctx, node, "", 0)
			if err != nil || len(leases.Allocations) != 1 {
				b.Fatalf("leases = %+v, %v", leases, err)
			}
			if err := s.disp.Report(ctx, node, agentapi.Report{AttemptRef: leases.Allocations[0].AttemptRef, Event: agentapi.EventStarted}); err != nil {
				b.Fatal(err)
			}
			measure("running/page", path, page, http.StatusOK)
			measure("running/live-part-unchanged", path+"?shown="+shown(), htmx, http.StatusNoContent)
			measure("running/live-part", path+"?shown="+shown()+"-before", htmx, http.StatusOK)
		})
	}
}
