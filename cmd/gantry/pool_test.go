package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/services/store"
)

// `gantry pool apply` writes valid pools, names the first wrong field of a bad one
// and then writes nothing, and `gantry pool ls` shows what was applied.
func TestPoolApplyAndList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "pools.yaml")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	write(`pools:
  - name: l4-spot
    provider: exec
    capacity_type: spot
    region: eu-west-1
    max_nodes: 4
    template: {gpu_model: L4-24GB, gpus: 1, cpu_milli: 8000, memory_mib: 32768}
    provider_config: {command: [/etc/gantry/aws-pool.sh]}
  - name: a100-owned
    provider: static
    capacity_type: owned
    template: {gpu_model: A100-80GB, gpus: 8, cpu_milli: 96000, memory_mib: 1048576}
`)
	out, stderr, code := gantry(t, nil, "pool", "apply", file, "--data-dir", data)
	if code != 0 || !strings.Contains(out, "pool l4-spot created") || !strings.Contains(out, "pool a100-owned created") {
		t.Fatalf("apply: exit %d, %s %s", code, out, stderr)
	}
	write(`pools:
  - name: a100-owned
    provider: static
    capacity_type: owned
    template: {cpu_milli: 1000, memory_mib: 1024}
  - name: h100
    provider: exec
    capacity_type: on-demand
    min_nodes: 3
    max_nodes: 1
    template: {cpu_milli: 1000, memory_mib: 1024}
    provider_config: {command: [/x]}
`)
	_, stderr, code = gantry(t, nil, "pool", "apply", file, "--data-dir", data)
	if code != 2 || !strings.Contains(stderr, "pools[1] (h100): max_nodes: 1 is below min_nodes 3") {
		t.Fatalf("bad pool: exit %d, %s", code, stderr)
	}
	out, _, code = gantry(t, nil, "pool", "ls", "--data-dir", data)
	if code != 0 || strings.Contains(out, "h100") || !strings.Contains(out, "8xA100-80GB") || !strings.Contains(out, "eu-west-1") {
		t.Fatalf("ls after a refused file: exit %d\n%s", code, out)
	}
	// Nodes join a static pool by hand, with a join token of that pool.
	if _, stderr, code = gantry(t, nil, "join-token", "create", "--name", "rack-1", "--pool", "a100-owned", "--data-dir", data); code != 0 {
		t.Fatalf("join token for a pool: exit %d %s", code, stderr)
	}
	if _, stderr, code = gantry(t, nil, "join-token", "create", "--name", "rack-2", "--pool", "nope", "--data-dir", data); code != 2 || !strings.Contains(stderr, `--pool "nope": there is no such pool`) {
		t.Fatalf("join token for an unknown pool: exit %d %s", code, stderr)
	}
	st, err := store.Open(t.Context(), store.Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	toks, err := st.JoinTokens(t.Context())
	p, _ := st.NodePoolByName(t.Context(), "a100-owned")
	if err != nil || len(toks) != 1 || toks[0].PoolID == nil || p == nil || *toks[0].PoolID != p.ID {
		t.Fatalf("join tokens %+v, %v", toks, err)
	}
}
