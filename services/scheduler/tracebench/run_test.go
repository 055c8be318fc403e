package tracebench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestEveryPolicyReplaysASyntheticTrace runs all policies on a small cluster: each
// decision is checked against the harness's own accounting, and a refusal while a node
// fits fails the run.
func TestEveryPolicyReplaysASyntheticTrace(t *testing.T) {
	var nodes []TraceNode
	for i, m := range []string{"A", "B", "A", "A", "B", "A"} {
		nodes = append(nodes, TraceNode{Name: "n" + string(rune('0'+i)), CPUMilli: int64(16+16*(i%3)) * 1000, MemoryMiB: 1 << 18, GPUs: 2 << (i % 3), Model: m})
	}
	var pods []TracePod
	for i := 0; i < 40; i++ {
		p := TracePod{Name: "p" + string(rune('A'+i)), CPUMilli: int64(1+i%7) * 1000, MemoryMiB: 1024}
		switch i % 5 {
		case 0, 1:
			p.Num, p.Milli = 1, 1000
		case 2:
			p.Num, p.Milli = 1, []int{250, 470, 810}[i%3]
		case 3:
			p.Num, p.Milli = 2, 1000
			p.Spec = []string{"A"}
		}
		pods = append(pods, p)
	}
	res, err := Run("synthetic", nodes, pods, 1.3, []int64{1, 2}, Policies())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Policies) != 8 || res.Policies[0].Policy != "gantry" {
		t.Fatalf("policies %+v", res.Policies)
	}
	for _, p := range res.Policies {
		if p.AllocRatio130 <= 50 || p.AllocRatio130 > 100 || p.PodsPerSec <= 0 || len(p.PerSeed) != 2 {
			t.Errorf("%s: %+v", p.Policy, p)
		}
		// Allocation ratios are rounded to hundredths; the ceiling is not.
		if p.AllocRatio130 > p.Ceiling+0.01 || p.Ceiling > 100 {
			t.Errorf("%s: allocation %.2f%% above its ceiling %.2f%%", p.Policy, p.AllocRatio130, p.Ceiling)
		}
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "trace synthetic, 2 seeds (1-2)") || !strings.Contains(buf.String(), "gpuclustering") {
		t.Fatalf("table:\n%s", buf.String())
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"trace":"synthetic"`, `"seeds":[1,2]`, `"alloc_ratio_100"`, `"alloc_ratio_130"`, `"first_fail_pct"`, `"frag_rate_90"`, `"ceiling"`, `"pods_per_sec"`, `"p99_decision_us"`} {
		if !bytes.Contains(raw, []byte(key)) {
			t.Errorf("JSON lacks %s: %s", key, raw)
		}
	}
}

func TestSelectPolicies(t *testing.T) {
	if ps, err := SelectPolicies("fgd, bestfit"); err != nil || len(ps) != 2 || ps[0].Name != "fgd" {
		t.Fatalf("%v %v", ps, err)
	}
	if _, err := SelectPolicies("tetris"); err == nil || !strings.Contains(err.Error(), "allowed: all, gantry, random") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Run("x", nil, nil, 1.3, nil, nil); err == nil || !strings.Contains(err.Error(), "seeds") {
		t.Fatalf("err = %v", err)
	}
}

// TestGantryBeatsFGDOnTheDefaultTrace is the one real-trace replay in `go test`: one
// seed, FGD against Gantry's production placement. The full ten-seed comparison on
// every trace is `gantry bench trace`.
func TestGantryBeatsFGDOnTheDefaultTrace(t *testing.T) {
	nodes, pods := loadTrace(t, "default")
	pols, err := SelectPolicies("gantry,fgd")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run("default", nodes, pods, 1.3, []int64{42}, pols)
	if err != nil {
		t.Fatal(err)
	}
	gantry, fgd := res.Policies[0].AllocRatio130, res.Policies[1].AllocRatio130
	t.Logf("seed 42 allocation at 130%%: gantry %.2f%% (ceiling %.2f%%), fgd %.2f%%", gantry, res.Policies[0].Ceiling, fgd)
	for _, p := range res.Policies {
		if p.AllocRatio130 > p.Ceiling+0.01 {
			t.Errorf("%s: allocation %.2f%% above its ceiling %.2f%%", p.Policy, p.AllocRatio130, p.Ceiling)
		}
	}
	// Published FGD mean: 95.39%; one seed lies within a few tenths of it.
	if fgd < 94.9 || fgd > 95.9 {
		t.Errorf("fgd %.2f%% is far from the published 95.39%%: the harness is off", fgd)
	}
	if gantry <= fgd {
		t.Errorf("gantry %.2f%% does not beat fgd %.2f%%", gantry, fgd)
	}
}
