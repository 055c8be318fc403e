package accounting

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gantry-gpu/gantry/models"
)

// Shares of one GPU are counted in 1/7000ths: the least common multiple of milli-GPUs
// and MIG sevenths, so that every share Gantry hands out is a whole number of units.
const (
	unitsPerGPU     = 7000
	migSlicesPerGPU = 7 // every MIG-capable card (A100, H100, H200) has seven compute slices
	unitsPerSlice   = unitsPerGPU / migSlicesPerGPU
	unitsPerMilli   = unitsPerGPU / 1000
)

// allocatedDevice is one entry of an allocation's devices JSON, as dispatch writes it.
type allocatedDevice struct {
	UUID       string `json:"uuid"`
	Milli      int64  `json:"milli"`
	MIGProfile string `json:"mig_profile"`
}

// gpuRef is what a GPU or MIG UUID points at.
type gpuRef struct {
	nodeID int64
	model  string
	slices int // compute slices of a MIG instance; 0 for a whole card
}

// gpuIndex finds GPUs and MIG slices by UUID.
type gpuIndex map[string]gpuRef

func newGPUIndex(devices []models.GPUDevice, migSlices []models.GPUSlice) gpuIndex {
	ix := gpuIndex{}
	byID := map[int64]models.GPUDevice{}
	for _, d := range devices {
		byID[d.ID] = d
		ix[d.UUID] = gpuRef{nodeID: d.NodeID, model: d.Model}
	}
	for _, s := range migSlices {
		if d, ok := byID[s.DeviceID]; ok {
			ix[s.UUID] = gpuRef{nodeID: d.NodeID, model: d.Model, slices: s.ComputeSlices}
		}
	}
	return ix
}

// modelShare is the share of GPUs of one model that an allocation holds, in 1/7000ths.
type modelShare struct {
	model string
	units int64
}

// shares returns what a holds of each GPU model, and a line for every device that cannot
// be priced (unknown, on another node, or a MIG profile that names no slice count).
func (ix gpuIndex) shares(a models.Allocation) ([]modelShare, []string) {
	if strings.TrimSpace(a.Devices) == "" {
		if a.GPUMilli > 0 {
			return nil, []string{fmt.Sprintf("allocation %d holds %d milli-GPUs but lists no devices", a.ID, a.GPUMilli)}
		}
		return nil, nil
	}
	var devs []allocatedDevice
	if err := json.Unmarshal([]byte(a.Devices), &devs); err != nil {
		return nil, []string{fmt.Sprintf("allocation %d: devices are not a JSON list of {uuid, milli, mig_profile}: %v", a.ID, err)}
	}
	byModel := map[string]int64{}
	var problems []string
	for _, d := range devs {
		ref, ok := ix[d.UUID]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("allocation %d: GPU %s is not registered", a.ID, d.UUID))
			continue
		case ref.nodeID != a.NodeID:
			problems = append(problems, fmt.Sprintf("allocation %d: GPU %s is not on node %d", a.ID, d.UUID, a.NodeID))
			continue
		}
		units, err := deviceUnits(d, ref)
		if err != nil {
			problems = append(problems, fmt.Sprintf("allocation %d: %v", a.ID, err))
			continue
		}
		byModel[ref.model] += units
	}
	out := make([]modelShare, 0, len(byModel))
	for m, u := range byModel {
		out = append(out, modelShare{model: m, units: u})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].model < out[j].model })
	return out, problems
}

// deviceUnits is the share of its card that one device entry holds: a MIG instance pays
// its compute slices out of seven, a fraction its milli-GPUs, anything else the whole card.
func deviceUnits(d allocatedDevice, ref gpuRef) (int64, error) {
	switch {
	case ref.slices > 0:
		return int64(ref.slices) * unitsPerSlice, nil
	case d.MIGProfile != "":
		n, ok := migComputeSlices(d.MIGProfile)
		if !ok {
			return 0, fmt.Errorf("MIG profile %q of %s names no compute slices (want e.g. 3g.40gb)", d.MIGProfile, d.UUID)
		}
		return int64(n) * unitsPerSlice, nil
	case d.Milli > 0 && d.Milli < 1000:
		return d.Milli * unitsPerMilli, nil
	}
	return unitsPerGPU, nil
}

// migComputeSlices reads the compute slices of a profile: 3 in "3g.40gb", 1 in "1c.3g.40gb".
func migComputeSlices(profile string) (int, bool) {
	first, _, _ := strings.Cut(profile, ".")
	if len(first) < 2 || (!strings.HasSuffix(first, "g") && !strings.HasSuffix(first, "c")) {
		return 0, false
	}
	n, err := strconv.Atoi(first[:len(first)-1])
	if err != nil || n < 1 || n > migSlicesPerGPU {
		return 0, false
	}
	return n, true
}
