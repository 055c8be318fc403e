package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
)

// gpuUse is what active allocations hold of each GPU (by UUID) in milli-GPU, a MIG slice
// counting as its compute slices out of seven, and which jobs hold it.
type gpuUse struct {
	device map[string]int64
	jobs   map[string][]int64
	mig    map[string]bool // MIG instances held, by UUID
}

// activeGPUUse reads every active allocation.
func (h *Handler) activeGPUUse(ctx context.Context) (gpuUse, error) {
	u := gpuUse{device: map[string]int64{}, jobs: map[string][]int64{}, mig: map[string]bool{}}
	allocs, err := h.store.ActiveAllocations(ctx, 0)
	if err != nil {
		return u, err
	}
	for _, a := range allocs {
		var devs []agentapi.Device
		if a.Devices != "" {
			if err := json.Unmarshal([]byte(a.Devices), &devs); err != nil {
				return u, fmt.Errorf("devices of allocation %d: %w", a.ID, err)
			}
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

// fleet reads the nodes a list shows (listedNodes) with their GPUs, and how many
// nodes were removed.
func (h *Handler) fleet(ctx context.Context, withRemoved bool) ([]models.Node, []models.GPUDevice, int, error) {
	nodes, removed, err := h.listedNodes(ctx, withRemoved)
	if err != nil {
		return nil, nil, 0, err
	}
	devs, err := h.store.FleetGPUs(ctx, withRemoved)
	return nodes, devs, removed, err
}

// gpusOf writes milli-GPU as GPUs: 2250 → "2.25".
func gpusOf(milli int64) string { return decimal(float64(milli) / 1000) }
