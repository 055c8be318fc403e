package pools_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/pools"
)

// script writes a shell script into a temporary directory and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "provider.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func retries(n int) *int { return &n }

var info = pools.PoolInfo{Name: "spot", CapacityType: "spot"}

func TestExecTimesOutAHangingScript(t *testing.T) {
	t.Parallel()
	x := pools.NewExec(pools.ExecConfig{Command: []string{script(t, "sleep 30 & wait")}, TimeoutSec: 1, Retries: retries(0)})
	start := time.Now()
	_, err := x.List(context.Background(), info)
	var pe *pools.ProviderError
	if !errors.As(err, &pe) || pe.Action != "list" || pe.Attempts != 1 || !strings.Contains(err.Error(), "timed out after 1s") {
		t.Fatalf("want a timeout naming the call, got %v", err)
	}
	// The script and its child are killed with their process group, so the call ends near the timeout.
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the hung call took %s", d)
	}
}

func TestExecReportsAFailingScript(t *testing.T) {
	t.Parallel()
	x := pools.NewExec(pools.ExecConfig{Command: []string{script(t, "echo 'quota exceeded for g5.xlarge' >&2; exit 3")}, Retries: retries(1), BackoffMS: 10})
	_, err := x.Create(context.Background(), pools.CreateRequest{Pool: info, Nodes: []pools.NewNode{{Name: "spot-1", JoinToken: "gjt_x"}}})
	var pe *pools.ProviderError
	if !errors.As(err, &pe) || pe.Attempts != 2 || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "quota exceeded") {
		t.Fatalf("want the exit status and stderr after 2 attempts, got %v", err)
	}
	if strings.Contains(err.Error(), "gjt_x") {
		t.Fatalf("the error shows the join token: %v", err)
	}
}

// A script that echoes its request prints the join tokens in it: the errors that
// carry what it printed (into the log, the pool's events, the audit log) do not.
func TestExecErrorsNeverCarryAJoinToken(t *testing.T) {
	t.Parallel()
	req := pools.CreateRequest{Pool: info, Nodes: []pools.NewNode{{Name: "spot-1", JoinToken: "gjt_ABCDEFGHIJKLMNOPQRSTUVWXYZ"}}}
	for name, body := range map[string]string{
		"stderr": "cat >&2; exit 1",
		"stdout": `echo "received: $(cat)"`,
	} {
		x := pools.NewExec(pools.ExecConfig{Command: []string{script(t, body)}, Retries: retries(0)})
		_, err := x.Create(context.Background(), req)
		if err == nil || strings.Contains(err.Error(), "ABCDEFGHIJKLMNOPQRSTUVWXYZ") || !strings.Contains(err.Error(), "gjt_[redacted]") {
			t.Errorf("a script echoing its request on %s: %v, want the join token redacted", name, err)
		}
	}
}

func TestExecRefusesMalformedJSON(t *testing.T) {
	t.Parallel()
	x := pools.NewExec(pools.ExecConfig{Command: []string{script(t, "echo '{\"nodes\": [oops'")}, Retries: retries(0)})
	_, err := x.List(context.Background(), info)
	if err == nil || !strings.Contains(err.Error(), "malformed JSON") || !strings.Contains(err.Error(), "oops") {
		t.Fatalf("want malformed JSON with what was printed, got %v", err)
	}
	x = pools.NewExec(pools.ExecConfig{Command: []string{script(t, `echo '{"nodes": [{"provider_id": "i-1"}]}'`)}, Retries: retries(0)})
	if _, err := x.List(context.Background(), info); err == nil || !strings.Contains(err.Error(), "nodes[0] has no name") {
		t.Fatalf("want a nameless node refused, got %v", err)
	}
}

// A script that fails once is tried again after the back-off and its answer used.
func TestExecRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	count := filepath.Join(t.TempDir(), "count")
	body := `n=$(cat ` + count + ` 2>/dev/null || echo 0); echo $((n+1)) > ` + count + `
[ "$n" -ge 1 ] || { echo 'throttled' >&2; exit 1; }
cat > /dev/null; echo '{"nodes": [{"name": "spot-1", "provider_id": "i-1", "state": "running"}]}'`
	x := pools.NewExec(pools.ExecConfig{Command: []string{script(t, body)}, BackoffMS: 200})
	start := time.Now()
	got, err := x.List(context.Background(), info)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "spot-1" || got[0].ProviderID != "i-1" {
		t.Fatalf("list %+v", got)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("retried after %s, before the back-off", d)
	}
	b, _ := os.ReadFile(count)
	if strings.TrimSpace(string(b)) != "2" {
		t.Fatalf("script ran %s times, want 2", b)
	}
}

// The request arrives on stdin with the action, pool and nodes; the environment names them too.
func TestExecSendsTheRequestOnStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := `cat > ` + dir + `/in.json; echo "$GANTRY_ACTION $GANTRY_POOL" > ` + dir + `/env; echo '{"nodes": []}'`
	x := pools.NewExec(pools.ExecConfig{Command: []string{script(t, body)}})
	_, err := x.Create(context.Background(), pools.CreateRequest{Pool: info, Server: "https://gantry.example.com",
		Nodes: []pools.NewNode{{Name: "spot-1", JoinToken: "gjt_secret"}}})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := os.ReadFile(filepath.Join(dir, "in.json"))
	env, _ := os.ReadFile(filepath.Join(dir, "env"))
	for _, want := range []string{`"action":"create"`, `"server":"https://gantry.example.com"`, `"join_token":"gjt_secret"`, `"name":"spot"`} {
		if !strings.Contains(string(in), want) {
			t.Errorf("stdin %s lacks %s", in, want)
		}
	}
	if strings.TrimSpace(string(env)) != "create spot" {
		t.Errorf("environment said %q", env)
	}
}
