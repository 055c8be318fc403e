package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// heartbeatFleet is one shape of fleet for BenchmarkHeartbeats: how many agents of 8
// GPUs, how often each heartbeats, and how long the measured window is (at least one
// minute, so that it holds a telemetry maintenance pass).
type heartbeatFleet struct {
	agents        int
	every, window time.Duration
}

func (f heartbeatFleet) String() string { return fmt.Sprintf("%dx8GPUs-every-%s", f.agents, f.every) }

// BenchmarkHeartbeats runs `gantry serve` (no local agent) on SQLite and on PostgreSQL
// with simulated agents of 8 GPUs each that join and heartbeat with a full GPU sample,
// as real agents do, in steady state, for each fleet: 500 agents every 5 s, and issue
// 9's 1,000 every 15 s. Two jobs of 4 GPUs run on every node (so every sample is
// attributed to a job and every third heartbeat carries the jobs' CPU use), and the
// history holds the minutes before the agents started and a day ago, so that the
// leader's telemetry maintenance inside the window rolls up a fleet-minute (the first
// pass up to two) and prunes a day-old one, as it does every minute of a running
// installation; metering and rules run as in production. Over the window it reports
// heartbeats/s answered against offered, the raw GPU samples stored (rows counted in
// the database by sample time, against those sent), the server's CPU (from /proc; the
// PostgreSQL server's own is not counted), the heartbeat round trip p50/p99/max as the
// agents see it, against a baseline in the same window (/healthz every 50 ms: same
// server, network and CPU, no database), and how many nodes the server saw as late.
// Run one fleet, or all:
// go test -run '^$' -bench 'Heartbeats/1000x8GPUs' -benchtime 1x ./cmd/gantry
func BenchmarkHeartbeats(b *testing.B) {
	for _, f := range []heartbeatFleet{{500, 5 * time.Second, 70 * time.Second}, {1000, 15 * time.Second, 75 * time.Second}, {2000, 15 * time.Second, 75 * time.Second}} {
		b.Run(f.String(), func(b *testing.B) {
			for _, backend := range storetest.Backends() {
				b.Run(backend.Name, func(b *testing.B) { benchHeartbeats(b, backend.Config(b), f) })
			}
		})
	}
}

func benchHeartbeats(b *testing.B, cfg store.Config, f heartbeatFleet) {
	const jobsPerNode = 2
	agents, every, window := f.agents, f.every, f.window
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := cfg.DataDir
	if dir == "" {
		dir = b.TempDir()
	}
	st := storetest.Open(b, cfg)
	url, pid, stop := benchServe(b, dir, cfg.DatabaseURL)
	defer stop()
	al := audit.New(st, time.Now)
	token, _, err := dispatch.CreateJoinToken(ctx, st, al, time.Now(), dispatch.JoinTokenSpec{Name: "fleet", TTL: time.Hour, Reusable: true})
	if err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: agents + 10}, Timeout: 30 * time.Second}
	creds := make([]string, agents)
	nodeIDs := make([]int64, agents)
	sims := make([]*gpu.Simulated, agents)
	var wg sync.WaitGroup
	for i := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("sim-%03d", i)
			sim, err := gpu.NewSimulated("8xA100-80GB", name, time.Now)
			if err != nil {
				b.Error(err)
				return
			}
			sims[i] = sim
			inv, _ := sims[i].Discover(ctx)
			for _, d := range inv.Devices {
				sim.SetLoad(d.UUID, 0.7)
			}
			var res agentapi.JoinResponse
			if err := benchPost(hc, url+agentapi.PathJoin, "", agentapi.JoinRequest{JoinToken: token, Name: name, Runtime: agentapi.RuntimeProcess,
				CPUMilli: 64000, MemoryMiB: 512 << 10, ScratchMiB: 1 << 20, Inventory: inv}, &res); err != nil {
				b.Error(err)
				return
			}
			creds[i] = res.Credential
		}()
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	for i := range agents {
		n, err := st.NodeByName(ctx, fmt.Sprintf("sim-%03d", i))
		if err != nil {
			b.Fatal(err)
		}
		nodeIDs[i] = n.ID
	}
	// The agents heartbeat from their join on, as real ones do, so that none is lost
	// while the jobs are placed and the history seeded; the jobs' CPU use goes with
	// their heartbeats once the jobs run.
	var mu sync.Mutex
	var rtts []time.Duration
	var sent []time.Time // the sample time of every heartbeat answered
	measuring := false
	var usage map[int64][]agentapi.JobUsage
	for i := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the agents over the interval, as independent machines would be.
			t := time.NewTimer(time.Duration(i) * every / time.Duration(agents))
			defer t.Stop()
			for beat := 0; ; beat++ {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				t.Reset(every)
				s, _ := sims[i].Sample(ctx)
				req := agentapi.HeartbeatRequest{Sample: &s}
				if beat%3 == 0 {
					mu.Lock()
					req.Jobs = usage[nodeIDs[i]]
					mu.Unlock()
				}
				t0 := time.Now()
				if err := benchPost(hc, url+agentapi.PathHeartbeat, creds[i], req, nil); err != nil && ctx.Err() == nil {
					b.Error(err)
					return
				}
				mu.Lock()
				sent = append(sent, s.Time)
				if measuring {
					rtts = append(rtts, time.Since(t0))
				}
				mu.Unlock()
			}
		}()
	}
	// The baseline: /healthz through the same server, network and CPU, touching no
	// database, so the heartbeat's tail can be read against what the load alone costs.
	var probes []time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			t0 := time.Now()
			if err := benchGet(hc, url+"/healthz"); err != nil && ctx.Err() == nil {
				b.Error(err)
				return
			}
			mu.Lock()
			if measuring {
				probes = append(probes, time.Since(t0))
			}
			mu.Unlock()
		}
	}()
	placed, holders := benchRunningJobs(b, st, al, nodeIDs, agents*jobsPerNode)
	mu.Lock()
	usage = placed
	mu.Unlock()
	benchSeedTelemetry(b, st, sims, nodeIDs, holders, every)
	b.ResetTimer()
	time.Sleep(2 * every) // warm up: every agent has heartbeated since the jobs were placed
	mu.Lock()
	measuring = true
	mu.Unlock()
	load0 := loadAverage(b)
	cpu0, t0 := procCPU(b, pid), time.Now()
	time.Sleep(window)
	cpu1, elapsed := procCPU(b, pid), time.Since(t0)
	load1 := loadAverage(b)
	mu.Lock()
	measuring = false
	got := append([]time.Duration(nil), rtts...)
	base := append([]time.Duration(nil), probes...)
	mu.Unlock()
	late, err := st.NodesSilentSince(ctx, time.Now().Add(-2*every), []string{models.NodeReady})
	if err != nil {
		b.Fatal(err)
	}
	cancel()
	wg.Wait()
	b.StopTimer()
	// What was stored, not what was answered: a heartbeat whose report cannot be stored
	// is still answered, without its samples. Counted by sample time, after every
	// heartbeat in flight was answered.
	t1 := t0.Add(elapsed)
	offered := 0
	for _, at := range sent {
		if !at.Before(t0) && at.Before(t1) {
			offered += 8
		}
	}
	stored := 0
	if err := st.EachTelemetry(context.Background(), models.ResolutionRaw, t0, t1, func(*models.TelemetrySample) error { stored++; return nil }); err != nil {
		b.Fatal(err)
	}
	if len(got) == 0 || len(base) == 0 {
		b.Fatalf("%d heartbeats and %d /healthz probes answered in the window; want some of each", len(got), len(base))
	}
	minutes, err := st.Telemetry(context.Background(), store.TelemetryFilter{DeviceUUID: holdersFirst(holders), Resolution: models.ResolutionMinute, From: t0.Add(-10 * time.Minute), To: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	cores := (cpu1 - cpu0).Seconds() / elapsed.Seconds()
	b.ReportMetric(float64(len(got))/elapsed.Seconds(), "heartbeats/s")
	b.ReportMetric(float64(agents)/every.Seconds(), "offered-heartbeats/s")
	b.ReportMetric(float64(stored)/elapsed.Seconds(), "stored-samples/s")
	b.ReportMetric(float64(agents*8)/every.Seconds(), "offered-samples/s")
	b.ReportMetric(cores, "server-cores")
	b.ReportMetric(1000*(cpu1-cpu0).Seconds()/float64(max(len(got), 1)), "server-cpu-ms/heartbeat")
	b.ReportMetric(float64(percentile(got, 50).Microseconds())/1000, "rtt-p50-ms")
	b.ReportMetric(float64(percentile(got, 99).Microseconds())/1000, "rtt-p99-ms")
	b.ReportMetric(float64(slices.Max(got).Microseconds())/1000, "rtt-max-ms")
	b.ReportMetric(float64(percentile(base, 50).Microseconds())/1000, "healthz-p50-ms")
	b.ReportMetric(float64(percentile(base, 99).Microseconds())/1000, "healthz-p99-ms")
	b.ReportMetric(percentile(got, 99).Seconds()/percentile(base, 99).Seconds(), "p99/healthz-p99")
	b.ReportMetric(float64(len(late)), "late-nodes")
	b.Logf("%d agents x 8 GPUs, %d jobs, heartbeat every %s: %d heartbeats in %s (%.1f/s of %.1f offered); %d raw GPU samples stored of %d sent in the window (%.1f/s of %.1f offered); server CPU %.2f cores (%.2f ms per heartbeat); round trip p50 %s p99 %s max %s (/healthz in the same window: p50 %s p99 %s); %d nodes silent for over %s at the end; %d minute roll-ups of one GPU so far; %d CPUs, load average %s at the start, %s at the end",
		agents, agents*jobsPerNode, every, len(got), elapsed.Round(time.Second), float64(len(got))/elapsed.Seconds(), float64(agents)/every.Seconds(),
		stored, offered, float64(stored)/elapsed.Seconds(), float64(agents*8)/every.Seconds(), cores,
		1000*(cpu1-cpu0).Seconds()/float64(max(len(got), 1)), percentile(got, 50), percentile(got, 99), slices.Max(got), percentile(base, 50), percentile(base, 99), len(late), 2*every, len(minutes), runtime.NumCPU(), load0, load1)
}

// benchRunningJobs submits n jobs of 4 GPUs, waits until the server placed every one,
// and returns each node's attempts as its agent reports their CPU use, and which job
// holds each device.
func benchRunningJobs(b *testing.B, st *store.Store, al *audit.Log, nodeIDs []int64, n int) (map[int64][]agentapi.JobUsage, map[string]int64) {
	b.Helper()
	ctx := context.Background()
	user, project := benchFixture(b, st)
	submit := jobs.New(st, al, noKick{}, nil)
	for i := range n {
		_, err := submit.Submit(ctx, user, jobs.Spec{Project: project, Name: fmt.Sprintf("train-%d", i), Command: []string{"/bin/true"},
			Resources: jobs.Resources{GPUs: 4, CPUMilli: 8000, MemoryMiB: 64 << 10}})
		if err != nil {
			b.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		usage, holders := map[int64][]agentapi.JobUsage{}, map[string]int64{}
		placed := 0
		for _, id := range nodeIDs {
			allocs, err := st.ActiveAllocations(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			for _, a := range allocs {
				usage[id] = append(usage[id], agentapi.JobUsage{AttemptRef: agentapi.AttemptRef{JobID: a.JobID, Attempt: a.Attempt, Replica: a.Replica}, CPUMilli: 7500})
				placed++
			}
			jobsOf, err := telemetry.JobsOfDevices(allocs)
			if err != nil {
				b.Fatal(err)
			}
			maps.Copy(holders, jobsOf)
		}
		if placed == n {
			return usage, holders
		}
		if time.Now().After(deadline) {
			b.Fatalf("the server placed %d of %d jobs in 5 minutes", placed, n)
		}
		time.Sleep(time.Second)
	}
}

// benchSeedTelemetry writes the raw history the agents would have sent over the
// three minutes before now, with a 1-minute roll-up before it, so that the server's
// next maintenance passes roll up one fleet-minute each (the first up to two), and
// two fleet-minutes from a day ago for them to prune.
func benchSeedTelemetry(b *testing.B, st *store.Store, sims []*gpu.Simulated, nodeIDs []int64, holders map[string]int64, every time.Duration) {
	b.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	from := now.Truncate(time.Minute).Add(-3 * time.Minute)
	old := now.Truncate(time.Minute).Add(-24*time.Hour - 2*time.Minute)
	rows := []models.TelemetrySample{{NodeID: nodeIDs[0], DeviceUUID: holdersFirst(holders), At: from.Add(-time.Minute), Resolution: models.ResolutionMinute, Samples: 1}}
	for _, span := range []struct{ from, to time.Time }{{from, now}, {old, old.Add(2 * time.Minute)}} {
		for at := span.from; at.Before(span.to); at = at.Add(every) {
			for i, sim := range sims {
				s, err := sim.Sample(ctx)
				if err != nil {
					b.Fatal(err)
				}
				for _, d := range s.Devices {
					r := models.TelemetrySample{NodeID: nodeIDs[i], DeviceUUID: d.UUID, At: at, Resolution: models.ResolutionRaw, Samples: 1,
						Reported: models.ReportedUtil | models.ReportedMemory | models.ReportedTemperature | models.ReportedPower | models.ReportedSMClock | models.ReportedNVLink | models.ReportedPCIe | models.ReportedECC}
					u, t := float64(*d.UtilizationPct), float64(*d.TemperatureC)
					r.UtilPct, r.UtilMinPct, r.UtilMaxPct = u, u, u
					r.TempC, r.TempMinC, r.TempMaxC = t, t, t
					r.PowerW, r.PowerMinW, r.PowerMaxW = *d.PowerW, *d.PowerW, *d.PowerW
					c := int64(*d.SMClockMHz)
					r.SMClockMHz, r.SMClockMinMHz, r.SMClockMaxMHz = c, c, c
					r.NVLinkMBps, r.NVLinkMaxMBps = 1000, 1000
					r.PCIeMBps, r.PCIeMaxMBps = 100, 100
					if job, ok := holders[d.UUID]; ok {
						r.JobID = &job
					}
					rows = append(rows, r)
				}
			}
		}
	}
	if err := st.InsertTelemetry(ctx, rows); err != nil {
		b.Fatal(err)
	}
}

// holdersFirst is the smallest device UUID that a job holds, to read one GPU's history.
func holdersFirst(holders map[string]int64) string {
	return slices.Min(slices.Collect(maps.Keys(holders)))
}

func benchGet(hc *http.Client, url string) error {
	res, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, res.Status)
	}
	return nil
}

func benchPost(hc *http.Client, url, credential string, body, out any) error {
	buf, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(buf))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if credential != "" {
		req.Header.Set("Authorization", "Bearer "+credential)
	}
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		var e agentapi.ErrorBody
		json.NewDecoder(res.Body).Decode(&e)
		return fmt.Errorf("%s: %d %s", url, res.StatusCode, e.Error.Message)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(res.Body).Decode(out)
}

// benchServe starts `gantry serve` without its local agent, on SQLite in dir or on the
// PostgreSQL of databaseURL, and returns its URL and pid.
func benchServe(b *testing.B, dir, databaseURL string) (string, int, func()) {
	b.Helper()
	args := []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir, "--no-local-agent", "--log-level", "warn"}
	if databaseURL != "" {
		args = append(args, "--database-url", databaseURL)
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = cleanEnv()
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	url := ""
	for sc.Scan() {
		if i := strings.Index(sc.Text(), "http://"); i >= 0 {
			url = strings.TrimSuffix(strings.Fields(sc.Text()[i:])[0], "/")
			break
		}
	}
	if url == "" {
		cmd.Process.Kill()
		b.Fatal("serve printed no URL")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return url, cmd.Process.Pid, func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
		if b.Failed() {
			out, _ := os.ReadFile(logf.Name())
			b.Logf("serve's log:\n%s", out[max(0, len(out)-4000):])
		}
	}
}

// loadAverage is the 1, 5 and 15-minute load averages of the machine, from /proc/loadavg.
func loadAverage(b *testing.B) string {
	b.Helper()
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatal(err)
	}
	return strings.Join(strings.Fields(string(raw))[:3], " ")
}

// procCPU is the CPU time a process used so far, from /proc/PID/stat.
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ is 100 on Linux
}
