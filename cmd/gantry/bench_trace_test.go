package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/services/scheduler/tracebench"
)

// writeTrace writes a small node and pod list in the openb format.
func writeTrace(t *testing.T) (nodes, pods string) {
	t.Helper()
	dir := t.TempDir()
	nodes = filepath.Join(dir, "openb_node_list_gpu_node.csv")
	pods = filepath.Join(dir, "openb_pod_list_tiny.csv")
	n := "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,262144,4,T4\nn1,64000,262144,8,V100M32\nn2,16000,131072,2,T4\n"
	p := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n" +
		"p0,4000,8192,1,1000,\np1,2000,4096,1,500,\np2,8000,8192,2,1000,V100M32\np3,1000,1024,0,0,\np4,3000,2048,1,250,T4\n"
	for path, body := range map[string]string{nodes: n, pods: p} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return nodes, pods
}

func runBenchTrace(args ...string) (string, error) {
	cmd := newBenchTraceCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestBenchTraceJSON(t *testing.T) {
	nodes, pods := writeTrace(t)
	out, err := runBenchTrace("--nodes", nodes, "--pods", pods, "--seeds", "1-2", "--policy", "gantry,fgd", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var res tracebench.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out)
	}
	if res.Trace != "tiny" || len(res.Seeds) != 2 || len(res.Policies) != 2 || res.Policies[0].Policy != "gantry" || res.Policies[1].Policy != "fgd" {
		t.Fatalf("result %+v", res)
	}
	for _, p := range res.Policies {
		if p.AllocRatio130 <= 0 || p.PodsPerSec <= 0 {
			t.Fatalf("%s: %+v", p.Policy, p)
		}
	}
}

func TestBenchTraceTable(t *testing.T) {
	nodes, pods := writeTrace(t)
	out, err := runBenchTrace("--nodes", nodes, "--pods", pods, "--seeds", "7", "--policy", "bestfit")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "trace tiny, 1 seeds (7)") || !strings.Contains(out, "bestfit") || !strings.Contains(out, "alloc@130%") {
		t.Fatalf("table:\n%s", out)
	}
}

func TestBenchTraceBadInput(t *testing.T) {
	nodes, pods := writeTrace(t)
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,12,1,1,abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		args  []string
		want  string
		usage bool
	}{
		{"bad seeds", []string{"--seeds", "9-1"}, "seeds", true},
		{"unknown policy", []string{"--policy", "tetris"}, `policy "tetris" is unknown`, true},
		{"bad format", []string{"--format", "xml"}, "want table or json", true},
		{"missing file", []string{"--pods", filepath.Join(t.TempDir(), "none.csv")}, "no such file", false},
		{"malformed pod list names the line", []string{"--pods", bad}, "bad.csv:2: column gpu_milli", false},
		{"inflation out of range", []string{"--inflate", "-1"}, "inflate", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--nodes", nodes, "--pods", pods, "--seeds", "1", "--policy", "firstfit"}, tc.args...)
			_, err := runBenchTrace(args...)
			var ue usageError
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &ue) != tc.usage {
				t.Fatalf("err = %v (usage %v), want %q (usage %v)", err, errors.As(err, &ue), tc.want, tc.usage)
			}
		})
	}
}

func TestTraceName(t *testing.T) {
	if got := traceName("../shared/x/openb_pod_list_gpushare40.csv"); got != "gpushare40" {
		t.Fatalf("traceName = %q", got)
	}
}
