package pools_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/pools"
)

func validSpec() pools.Spec {
	return pools.Spec{
		Name: "a100-spot", Provider: pools.ProviderExec, Region: "eu-west-1", Zone: "eu-west-1a", CapacityType: models.CapacitySpot,
		MinNodes: 0, MaxNodes: 4, IdleTimeout: "10m",
		Template:       pools.Template{GPUModel: "A100-80GB", GPUs: 8, CPUMilli: 96000, MemoryMiB: 1 << 20, ScratchMiB: 1 << 20, Labels: map[string]string{"rack": "x"}},
		ProviderConfig: map[string]any{"command": []any{"/etc/gantry/aws-pool.sh"}, "timeout_sec": 60},
	}
}

func TestSpecValidates(t *testing.T) {
	p, err := validSpec().Validate()
	if err != nil {
		t.Fatal(err)
	}
	if p.IdleTimeoutSec != 600 || p.Template == "" || !strings.Contains(p.ProviderConfig, "aws-pool.sh") {
		t.Fatalf("pool row %+v", p)
	}
	tmpl, err := pools.ParseTemplate(p.Template)
	if err != nil || tmpl.CardMemoryMiB() != 81920 || tmpl.SimulatedGPUs() != "8xA100-80GB" {
		t.Fatalf("template %+v (%v): card memory %d", tmpl, err, tmpl.CardMemoryMiB())
	}
}

// Every wrong field is refused with its name and what is allowed, never accepted.
func TestSpecRefusesBadInput(t *testing.T) {
	cases := []struct {
		name, field, says string
		mutate            func(*pools.Spec)
	}{
		{"max below min", "max_nodes", "below min_nodes 3", func(s *pools.Spec) { s.MinNodes, s.MaxNodes = 3, 2 }},
		{"unknown provider", "provider", "allowed: static, exec, slurm", func(s *pools.Spec) { s.Provider = "aws" }},
		{"unknown capacity type", "capacity_type", "allowed: owned, on-demand, spot", func(s *pools.Spec) { s.CapacityType = "preemptible" }},
		{"negative min", "min_nodes", "negative", func(s *pools.Spec) { s.MinNodes = -1 }},
		{"absurd max", "max_nodes", "out of range", func(s *pools.Spec) { s.MaxNodes = 1_000_000 }},
		{"bad name", "name", "lower-case", func(s *pools.Spec) { s.Name = "GPU pool" }},
		{"empty name", "name", "required", func(s *pools.Spec) { s.Name = "" }},
		{"bad zone", "zone", "lower-case", func(s *pools.Spec) { s.Zone = "eu west" }},
		{"exec without command", "provider_config.command", "required", func(s *pools.Spec) { s.ProviderConfig = nil }},
		{"exec unknown key", "provider_config", "unknown field", func(s *pools.Spec) { s.ProviderConfig["comand"] = "x" }},
		{"exec timeout", "provider_config.timeout_sec", "1 to 3600", func(s *pools.Spec) { s.ProviderConfig["timeout_sec"] = 7200 }},
		{"exec retries", "provider_config.retries", "0 to 10", func(s *pools.Spec) { s.ProviderConfig["retries"] = 11 }},
		{"static with config", "provider_config", "static pool", func(s *pools.Spec) { s.Provider = pools.ProviderStatic }},
		{"static with min", "min_nodes", "static pool", func(s *pools.Spec) { s.Provider, s.ProviderConfig, s.MinNodes = pools.ProviderStatic, nil, 1 }},
		{"gpus without model", "template.gpu_model", "known models", func(s *pools.Spec) { s.Template.GPUModel = "" }},
		{"model without gpus", "template.gpus", "number of cards", func(s *pools.Spec) { s.Template.GPUs = 0 }},
		{"unknown model without memory", "template.gpu_memory_mib", "does not know", func(s *pools.Spec) { s.Template.GPUModel = "X9000" }},
		{"too many gpus", "template.gpus", "0 to 16", func(s *pools.Spec) { s.Template.GPUs = 17 }},
		{"NVLink of one card", "template.nvlink", "two or more cards", func(s *pools.Spec) { s.Template.GPUs, s.Template.NVLink = 1, true }},
		{"unknown runtime", "template.runtime", "allowed: process, docker, podman", func(s *pools.Spec) { s.Template.Runtime = "containerd" }},
		{"no cpu", "template.cpu_milli", "required", func(s *pools.Spec) { s.Template.CPUMilli = 0 }},
		{"no memory", "template.memory_mib", "required", func(s *pools.Spec) { s.Template.MemoryMiB = 0 }},
		{"idle timeout", "idle_timeout", "from 1m0s", func(s *pools.Spec) { s.IdleTimeout = "5s" }},
		{"slurm config", "provider_config", "Slurm", func(s *pools.Spec) {
			s.Provider, s.Template, s.ProviderConfig = pools.ProviderSlurm, pools.Template{}, map[string]any{"x": 1}
		}},
		{"slurm with a template", "template", "from its partition", func(s *pools.Spec) { s.Provider = pools.ProviderSlurm }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := validSpec()
			c.mutate(&s)
			_, err := s.Validate()
			var fe *models.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("want a FieldError on %s, got %v", c.field, err)
			}
			if fe.Field != c.field || !strings.Contains(fe.Message, c.says) {
				t.Fatalf("got %s: %s; want %s saying %q", fe.Field, fe.Message, c.field, c.says)
			}
		})
	}
}

// A Slurm pool takes its nodes from its partition: it has no template.
func TestSlurmSpecValidates(t *testing.T) {
	s := pools.Spec{Name: "hpc", Provider: pools.ProviderSlurm, CapacityType: models.CapacityOwned,
		ProviderConfig: map[string]any{"partition": "gpu", "log_dir": "/shared/logs", "checkpoint_dir": "/shared/ckpt", "qos": map[string]any{"production": "high"}}}
	p, err := s.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if p.Template != "" || !strings.Contains(p.ProviderConfig, `"partition":"gpu"`) {
		t.Errorf("Slurm pool %+v", p)
	}
}

func TestNodeLabels(t *testing.T) {
	p, err := validSpec().Validate()
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _ := pools.ParseTemplate(p.Template)
	l := pools.NodeLabels(p, tmpl)
	want := map[string]string{"rack": "x", pools.LabelPool: "a100-spot", pools.LabelCapacity: "spot",
		pools.LabelRegion: "eu-west-1", pools.LabelZone: "eu-west-1a"}
	for k, v := range want {
		if l[k] != v {
			t.Errorf("label %s = %q, want %q", k, l[k], v)
		}
	}
	if len(l) != len(want) {
		t.Errorf("labels %v, want %v", l, want)
	}
}
