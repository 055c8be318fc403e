package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
	"github.com/gantry-gpu/gantry/services/store"
)

// BenchmarkHeartbeats500Agents runs `gantry serve` (no local agent) and 500
// simulated agents of 8 GPUs each that join and heartbeat every 5 s with a full
// GPU sample, as real agents do. Over a 30 s window it reports the server's CPU
// (from /proc), the heartbeat round trip p50/p99 as the agents see it, and how
// many nodes the server saw as late. Run:
// go test -run '^$' -bench Heartbeats500Agents -benchtime 1x ./cmd/gantry
func BenchmarkHeartbeats500Agents(b *testing.B) {
	const agents, every, window = 500, 5 * time.Second, 30 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := b.TempDir()
	url, pid, stop := benchServe(b, dir)
	defer stop()
	st, err := store.Open(ctx, store.Config{DataDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	token, _, err := dispatch.CreateJoinToken(ctx, st, audit.New(st, time.Now), time.Now(), dispatch.JoinTokenSpec{Name: "fleet", TTL: time.Hour, Reusable: true})
	if err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: agents + 10}, Timeout: 30 * time.Second}
	creds := make([]string, agents)
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
	var mu sync.Mutex
	var rtts []time.Duration
	measuring := false
	b.ResetTimer()
	for i := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread the agents over the interval, as independent machines would be.
			t := time.NewTimer(time.Duration(i) * every / agents)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				t.Reset(every)
				s, _ := sims[i].Sample(ctx)
				t0 := time.Now()
				if err := benchPost(hc, url+agentapi.PathHeartbeat, creds[i], agentapi.HeartbeatRequest{Sample: &s}, nil); err != nil && ctx.Err() == nil {
					b.Error(err)
					return
				}
				mu.Lock()
				if measuring {
					rtts = append(rtts, time.Since(t0))
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(2 * every) // warm up: every agent has heartbeated at least once
	mu.Lock()
	measuring = true
	mu.Unlock()
	cpu0, t0 := procCPU(b, pid), time.Now()
	time.Sleep(window)
	cpu1, elapsed := procCPU(b, pid), time.Since(t0)
	mu.Lock()
	measuring = false
	got := append([]time.Duration(nil), rtts...)
	mu.Unlock()
	late, err := st.NodesSilentSince(ctx, time.Now().Add(-2*every), []string{models.NodeReady})
	if err != nil {
		b.Fatal(err)
	}
	cancel()
	wg.Wait()
	b.StopTimer()
	cores := (cpu1 - cpu0).Seconds() / elapsed.Seconds()
	b.ReportMetric(cores, "server-cores")
	b.ReportMetric(float64(percentile(got, 50).Microseconds())/1000, "rtt-p50-ms")
	b.ReportMetric(float64(percentile(got, 99).Microseconds())/1000, "rtt-p99-ms")
	b.ReportMetric(float64(len(late)), "late-nodes")
	b.Logf("%d agents x 8 GPUs, heartbeat every %s: %d heartbeats in %s (%.0f/s); server CPU %.2f cores (%.2f ms per heartbeat); round trip p50 %s p99 %s; %d nodes silent for over %s at the end",
		agents, every, len(got), elapsed.Round(time.Second), float64(len(got))/elapsed.Seconds(), cores,
		1000*(cpu1-cpu0).Seconds()/float64(max(len(got), 1)), percentile(got, 50), percentile(got, 99), len(late), 2*every)
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

// benchServe starts `gantry serve` without its local agent and returns its URL and pid.
func benchServe(b *testing.B, dir string) (string, int, func()) {
	b.Helper()
	cmd := exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--data-dir", dir, "--no-local-agent", "--log-level", "warn")
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
	return url, cmd.Process.Pid, func() { cmd.Process.Kill(); cmd.Wait(); logf.Close() }
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
