package pools

import (
	"context"
	"fmt"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/scheduler"
	"github.com/gantry-gpu/gantry/services/store"
)

// TemplateNode is a node of pool p as its template t makes it, as the scheduler reads
// it (no id, no price).
func TemplateNode(p models.NodePool, t Template) scheduler.Node {
	n := scheduler.Node{Pool: p.Name, Labels: NodeLabels(p, t), Spot: p.CapacityType == models.CapacitySpot || p.SpotOnly,
		CPUMilli: t.CPUMilli, RAMMiB: t.MemoryMiB, ScratchMiB: t.ScratchMiB, Runs: t.Runs()}
	for g := range t.GPUs {
		gpu := scheduler.GPU{Index: g, Model: t.GPUModel, MemoryMiB: t.CardMemoryMiB()}
		for p := range t.GPUs {
			if t.NVLink && p != g {
				gpu.NVLinkPeers = append(gpu.NVLinkPeers, p)
			}
		}
		n.GPUs = append(n.GPUs, gpu)
	}
	return n
}

// Fitter says whether a job could ever run on the nodes there are, plus more.
type Fitter interface {
	CheckFit(ctx context.Context, job models.Job, more []scheduler.Node) error
}

// FitCheck refuses at submission a job that no node nor any node a pool can still
// add could ever hold.
type FitCheck struct {
	store *store.Store
	nodes Fitter
}

// NewFitCheck returns the check over the pools of st and the nodes nodes knows.
func NewFitCheck(st *store.Store, nodes Fitter) *FitCheck { return &FitCheck{store: st, nodes: nodes} }

// CheckFit returns a *models.FieldError naming the job spec's field when job fits
// neither a node nor the template of a pool that creates nodes (spot pools only for
// jobs that allow spot).
func (f *FitCheck) CheckFit(ctx context.Context, job models.Job) error {
	list, err := f.store.NodePools(ctx)
	if err != nil {
		return fmt.Errorf("check the fit of job %s: %w", job.Name, err)
	}
	var more []scheduler.Node
	for _, p := range list {
		spot := p.CapacityType == models.CapacitySpot || p.SpotOnly
		if p.Provider != ProviderExec || p.MaxNodes == 0 || spot && !job.Spot {
			continue
		}
		t, err := ParseTemplate(p.Template)
		if err != nil {
			return fmt.Errorf("check the fit of job %s: pool %s: %w", job.Name, p.Name, err)
		}
		more = append(more, TemplateNode(p, t))
	}
	return f.nodes.CheckFit(ctx, job, more)
}
