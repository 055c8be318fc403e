package scheduler

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateRequest(t *testing.T) {
	nodes := []Node{
		gpuNode("a", "A100", 8, 81920, 128000, 1<<20),
		gpuNode("b", "L4", 4, 24576, 64000, 512<<10),
		migNode("m", "A100", 40960, migSlice("s", "1g.5gb", 5)),
	}
	offer := OfferOf(nodes)
	cfg := DefaultConfig()
	cases := []struct {
		name      string
		req       Request
		field     string
		mentioned string
	}{
		{"nine GPUs", Request{GPUs: 9}, "gpus", "allowed: 0..8"},
		{"two terabytes of RAM", Request{GPUs: 1, RAMMiB: 2 << 20}, "ram_mib", "largest node (1048576 MiB)"},
		{"unknown model", Request{GPUs: 1, GPUModels: []string{"H100"}}, "gpu_models", "allowed: A100, L4"},
		{"share of more than one GPU", Request{GPUs: 2, GPUMilli: 500}, "gpu_milli", "needs gpus = 1"},
		{"more cores than any node", Request{CPUMilli: 200000}, "cpu_milli", "largest node (128000 milli-cores)"},
		{"more L4s than a node has", Request{GPUs: 8, GPUModels: []string{"L4"}}, "gpus", "(4)"},
		{"card memory beyond the largest L4", Request{GPUs: 1, GPUModels: []string{"L4"}, GPUMemoryMiB: 40000}, "gpu_memory_mib", "L4 with 24576 MiB"},
		{"unknown MIG profile", Request{MIGProfile: "7g.80gb"}, "mig_profile", "offered: 1g.5gb"},
		{"malformed MIG profile", Request{MIGProfile: "half"}, "mig_profile", "form 1g.10gb"},
		{"unknown class", Request{Class: "urgent"}, "class", "allowed: production, research, test"},
		{"unknown kind", Request{Kind: "serving"}, "kind", "allowed: training, inference, batch"},
		{"negative replicas", Request{Replicas: -1}, "replicas", "allowed: 1..1024"},
		{"model without GPUs", Request{GPUModels: []string{"A100"}}, "gpus", "ask for gpus = 1 or more"},
		{"unknown pool", Request{Pool: "gpu-west"}, "pool", "allowed: default"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateRequest(tc.req, cfg, offer)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *FieldError", err)
			}
			if fe.Field != tc.field || !strings.Contains(fe.Message, tc.mentioned) {
				t.Fatalf("got %s: %s; want field %s mentioning %q", fe.Field, fe.Message, tc.field, tc.mentioned)
			}
		})
	}
	valid := []Request{
		{GPUs: 8, GPUModels: []string{"A100"}, GPUMemoryMiB: 81920, CPUMilli: 128000},
		{GPUs: 1, GPUMilli: 250, CPUMilli: 1000},
		{MIGProfile: "1g.5gb", GPUModels: []string{"A100"}},
		{CPUMilli: 4000, RAMMiB: 1024, Replicas: 16, Class: "test", Kind: KindBatch},
	}
	for _, r := range valid {
		if err := ValidateRequest(r, cfg, offer); err != nil {
			t.Errorf("ValidateRequest(%+v) = %v, want nil", r, err)
		}
	}
}

// A job is refused when no node's runtime starts it: a container image where every
// node runs plain commands, a plain command where every node runs containers.
func TestValidateRequestRuntime(t *testing.T) {
	node := func(id string, runs Runs) Node {
		n := gpuNode(id, "L4", 1, 24576, 8000, 32768)
		n.Runs = runs
		return n
	}
	cases := []struct {
		name      string
		nodes     []Node
		container bool
		mentioned string // "" when the request is valid
	}{
		{"image on process nodes", []Node{node("p1", RunsPlain), node("p2", RunsPlain)}, true, "every node runs plain commands only"},
		{"plain command on container nodes", []Node{node("c1", RunsContainers)}, false, "every node runs containers only"},
		{"image with one container node", []Node{node("p1", RunsPlain), node("c1", RunsContainers)}, true, ""},
		{"plain command with one process node", []Node{node("c1", RunsContainers), node("p1", RunsPlain)}, false, ""},
		{"image on a node that runs both", []Node{node("s1", RunsBoth)}, true, ""},
		{"plain command on a node that runs both", []Node{node("s1", RunsBoth)}, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateRequest(Request{GPUs: 1, Container: tc.container}, DefaultConfig(), OfferOf(tc.nodes))
			if tc.mentioned == "" {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "image" || !strings.Contains(fe.Message, tc.mentioned) {
				t.Fatalf("err = %v, want a FieldError on image mentioning %q", err, tc.mentioned)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	cases := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"no classes", func(c *Config) { c.Classes = nil }, "classes"},
		{"duplicate class", func(c *Config) { c.Classes = append(c.Classes, c.Classes[0]) }, "classes[3].name"},
		{"unknown default class", func(c *Config) { c.DefaultClass = "none" }, "default_class"},
		{"negative weight", func(c *Config) { c.StrandingWeight = -1 }, "stranding_weight"},
		{"zero horizon", func(c *Config) { c.AgeHorizon = 0 }, "age_horizon"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.edit(&cfg)
			var fe *FieldError
			if err := cfg.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("err = %v, want a FieldError on %s", err, tc.field)
			}
			if _, err := New(cfg); err == nil {
				t.Fatal("New accepted an invalid config")
			}
		})
	}
}
