package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `gantry bench fleet --format json` prints the fields the issue asks for; a pod list
// without times, or a bad flag, is refused with one line.
func TestBenchFleetJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	nodes := filepath.Join(dir, "nodes.csv")
	pods := filepath.Join(dir, "pods.csv")
	os.WriteFile(nodes, []byte("sn,cpu_milli,memory_mib,gpu,model\nn1,32000,131072,2,T4\nn2,32000,131072,2,T4\n"), 0o600)
	body := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
	for i, q := range []string{"LS", "BE", "BE", "LS"} {
		body += strings.Join([]string{"p" + itoa(int64(i)), "4000", "8192", "1", "1000", "", q, "Running", itoa(int64(i) * 600), itoa(int64(i)*600 + 3600), ""}, ",") + "\n"
	}
	os.WriteFile(pods, []byte(body), 0o600)
	out, stderr, code := gantry(t, nil, "bench", "fleet", "--nodes", nodes, "--pods", pods, "--speedup", "1", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, k := range []string{"static_cost", "autoscale_cost", "spot_cost", "savings_pct", "p95_queue_delay_s", "interruptions", "jobs_lost"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("no %s in %s", k, out)
		}
	}
	if rep["jobs_lost"] != float64(0) || rep["static_cost"].(float64) <= rep["spot_cost"].(float64) {
		t.Fatalf("report %s", out)
	}
	os.WriteFile(pods, []byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1024,1,1000\n"), 0o600)
	if _, stderr, code = gantry(t, nil, "bench", "fleet", "--nodes", nodes, "--pods", pods); code != 2 || !strings.Contains(stderr, "no creation_time and deletion_time") {
		t.Fatalf("pods without times: exit %d %s", code, stderr)
	}
	if _, stderr, code = gantry(t, nil, "bench", "fleet", "--nodes", nodes, "--pods", pods, "--spot-ratio", "2"); code != 2 || !strings.Contains(stderr, "spot ratio") {
		t.Fatalf("bad spot ratio: exit %d %s", code, stderr)
	}
}
