package handlers

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/store"
)

// gpuUse is what active allocations hold of each GPU (by UUID) in milli-GPU, a MIG slice
// counting as its compute slices out of seven, and which jobs hold it.
type gpuUse struct {
	device map[string]int64
	jobs   map[string][]int64
	mig    map[string]bool // MIG instances held, by UUID
}

// activeGPUUse reads what every active allocation holds.
func (h *Handler) activeGPUUse(ctx context.Context) (gpuUse, error) {
	u := gpuUse{device: map[string]int64{}, jobs: map[string][]int64{}, mig: map[string]bool{}}
	held, err := h.store.ActiveAllocationDevices(ctx)
	if err != nil {
		return u, err
	}
	for _, a := range held {
		devs, err := agentapi.ParseDevices(a.Devices)
		if err != nil {
			return u, fmt.Errorf("devices of an allocation of job %d: %w", a.JobID, err)
		}
		for _, d := range devs {
			milli := d.Milli
			if d.MIGProfile != "" {
				milli = int64(migSlicesOf(d.MIGProfile)) * 1000 / 7
				u.mig[d.MIGUUID] = true
			}
			u.device[d.UUID] += milli
			u.jobs[d.UUID] = append(u.jobs[d.UUID], a.JobID)
		}
	}
	return u, nil
}

// migSlicesOf is the compute slices of a MIG profile: 3 for "3g.40gb".
func migSlicesOf(profile string) int {
	g, _, _ := strings.Cut(profile, "g.")
	n, _ := strconv.Atoi(g)
	return n
}

// fleet reads the nodes a list shows (listedNodes), how many nodes were removed, and
// every GPU of the fleet with its MIG instances (those of nodes not listed too): as the
// scheduling passes keep them where the server dispatches, which it does but in tests.
// The GPUs are shared and must not be changed.
func (h *Handler) fleet(ctx context.Context, withRemoved bool) ([]models.Node, []store.FleetGPU, int, error) {
	nodes, removed, err := h.listedNodes(ctx, withRemoved)
	if err != nil {
		return nil, nil, 0, err
	}
	var gpus []store.FleetGPU
	if h.dispatch != nil {
		gpus, err = h.dispatch.FleetGPUs(ctx)
	} else {
		gpus, err = h.store.FleetGPUs(ctx)
	}
	return nodes, gpus, removed, err
}

// gpusOf writes milli-GPU as GPUs: 2250 → "2.25".
func gpusOf(milli int64) string { return decimal(float64(milli) / 1000) }
