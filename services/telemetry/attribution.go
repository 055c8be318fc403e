package telemetry

import (
	"encoding/json"
	"fmt"

	"github.com/gantry-gpu/gantry/models"
)

// JobsOfDevices maps every GPU or MIG instance that exactly one of allocs holds to
// that allocation's job: the Jobs of a NodeSample, from the node's live allocations.
// A device two jobs share (fractional GPUs) belongs to neither: its readings are the
// sum of both.
func JobsOfDevices(allocs []models.Allocation) (map[string]int64, error) {
	holders := map[string][]int64{}
	for _, a := range allocs {
		if a.Devices == "" {
			continue
		}
		var devices []struct {
			UUID string `json:"uuid"`
		}
		if err := json.Unmarshal([]byte(a.Devices), &devices); err != nil {
			return nil, fmt.Errorf("devices of allocation %d (job %d): %w", a.ID, a.JobID, err)
		}
		for _, d := range devices {
			if len(holders[d.UUID]) == 0 || holders[d.UUID][0] != a.JobID {
				holders[d.UUID] = append(holders[d.UUID], a.JobID)
			}
		}
	}
	out := make(map[string]int64, len(holders))
	for uuid, jobs := range holders {
		if len(jobs) == 1 {
			out[uuid] = jobs[0]
		}
	}
	return out, nil
}
