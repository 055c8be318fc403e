package scheduler

import (
	"fmt"
	"slices"
	"time"
)

// PriorityClass is a named class. A higher Weight runs first, whatever the waiting time
// or fair share of jobs in lower classes. A class that CanPreempt may evict preemptible
// jobs of a lower Weight, never of an equal or higher one.
type PriorityClass struct {
	Name       string
	Weight     float64
	CanPreempt bool
}

// Config holds the scheduler's tunables. DefaultConfig is what production runs.
type Config struct {
	Classes      []PriorityClass
	DefaultClass string

	// Within a class, jobs are ordered by AgeWeight × ageing + FairShareWeight × fair share.
	// AgeWeight counts in full once a job has waited AgeHorizon.
	AgeWeight  float64
	AgeHorizon time.Duration
	// FairShareWeight scales the fair-share factor 2^(-usage/entitlement) (Slurm's
	// classic form) of the job's team; usage decays with FairShareHalfLife.
	FairShareWeight   float64
	FairShareHalfLife time.Duration

	// StrandingWeight prices, in milli-GPU, each milli-GPU a placement leaves without
	// enough CPU on its node to be used by the expected workload.
	StrandingWeight float64
	// PatternWeight prices, in milli-GPU per milli-card, the card worth a share wastes
	// against the packing patterns of the workload (see patternScorer).
	PatternWeight float64
	// NVLinkBonus rewards multi-GPU placements on fully NVLink-connected cards.
	NVLinkBonus float64
	// MemoryFitWeight penalises giving a job that names its GPU memory a larger card
	// than it needs, in proportion to the share of the card left over.
	MemoryFitWeight float64
	// KindModels steers jobs that name no model: kind -> preferred models.
	KindModels map[Kind][]string
	KindBonus  float64
	// SpotBonus prefers spot nodes for jobs that allow spot: they cost less.
	SpotBonus float64
	// PriceWeight prefers cheaper nodes (by hourly price per GPU): the cheapest node
	// gains the full weight, the dearest nothing. Owned nodes, priced 0, come first.
	PriceWeight float64

	// FullScanNodes is the largest cluster on which every feasible node is scored. On a
	// larger one a replica is scored on the first SampleNodes feasible nodes in node
	// order, as kube-scheduler's percentageOfNodesToScore and Nomad's limit iterator do.
	FullScanNodes int
	SampleNodes   int

	// Backfill lets jobs behind a blocked head start when they do not delay it.
	Backfill bool
	// Preemption lets a higher class evict lower-class preemptible jobs.
	Preemption bool
}

// DefaultConfig is production's configuration; the trace benchmark runs it unchanged.
func DefaultConfig() Config {
	return Config{
		Classes: []PriorityClass{
			{Name: "production", Weight: 3000, CanPreempt: true},
			{Name: "research", Weight: 2000, CanPreempt: true},
			{Name: "test", Weight: 1000, CanPreempt: true},
		},
		DefaultClass:      "research",
		AgeWeight:         400,
		AgeHorizon:        72 * time.Hour,
		FairShareWeight:   500,
		FairShareHalfLife: 7 * 24 * time.Hour,
		StrandingWeight:   2,
		PatternWeight:     10,
		NVLinkBonus:       400,
		MemoryFitWeight:   300,
		KindModels: map[Kind][]string{
			KindInference: {"L4", "T4", "A10", "A10G", "A2", "L40S"},
			KindTraining:  {"A100", "H100", "H200", "B200"},
		},
		KindBonus:     1000,
		SpotBonus:     50,
		PriceWeight:   600,
		FullScanNodes: 2048,
		SampleNodes:   64,
		Backfill:      true,
		Preemption:    true,
	}
}

// Validate reports the first setting that cannot work, naming it.
func (c Config) Validate() error {
	if len(c.Classes) == 0 {
		return &FieldError{Field: "classes", Message: "at least one priority class is required"}
	}
	seen := map[string]bool{}
	for i, pc := range c.Classes {
		if pc.Name == "" {
			return &FieldError{Field: fmt.Sprintf("classes[%d].name", i), Message: "must not be empty"}
		}
		if seen[pc.Name] {
			return &FieldError{Field: fmt.Sprintf("classes[%d].name", i), Message: fmt.Sprintf("class %q is defined twice", pc.Name)}
		}
		seen[pc.Name] = true
	}
	if !seen[c.DefaultClass] {
		return &FieldError{Field: "default_class", Message: fmt.Sprintf("%q is not a class; allowed: %s", c.DefaultClass, c.classNames())}
	}
	weights := []struct {
		field string
		v     float64
	}{
		{"age_weight", c.AgeWeight}, {"fair_share_weight", c.FairShareWeight}, {"stranding_weight", c.StrandingWeight}, {"pattern_weight", c.PatternWeight},
		{"nvlink_bonus", c.NVLinkBonus}, {"memory_fit_weight", c.MemoryFitWeight}, {"kind_bonus", c.KindBonus}, {"spot_bonus", c.SpotBonus},
		{"price_weight", c.PriceWeight},
	}
	for _, w := range weights {
		if w.v < 0 {
			return &FieldError{Field: w.field, Message: fmt.Sprintf("%g is negative; allowed: 0 or more", w.v)}
		}
	}
	if c.FullScanNodes < 0 || c.SampleNodes < 0 {
		return &FieldError{Field: "sample_nodes", Message: "full_scan_nodes and sample_nodes must be 0 or more"}
	}
	if c.AgeHorizon <= 0 {
		return &FieldError{Field: "age_horizon", Message: "must be positive"}
	}
	if c.FairShareHalfLife <= 0 {
		return &FieldError{Field: "fair_share_half_life", Message: "must be positive"}
	}
	return nil
}

// class returns the named class, or the default class for an empty name.
func (c Config) class(name string) (PriorityClass, bool) {
	if name == "" {
		name = c.DefaultClass
	}
	i := slices.IndexFunc(c.Classes, func(pc PriorityClass) bool { return pc.Name == name })
	if i < 0 {
		return PriorityClass{}, false
	}
	return c.Classes[i], true
}

func (c Config) classNames() string {
	s := ""
	for i, pc := range c.Classes {
		if i > 0 {
			s += ", "
		}
		s += pc.Name
	}
	return s
}
