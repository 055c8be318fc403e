package dispatch

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gantry-gpu/gantry/models"
)

// previewJobID stands for the job a preview asks about; no stored job has it.
const previewJobID = -1

// PlacementPreview says what the scheduler would do with a job submitted now.
type PlacementPreview struct {
	// Placed: it would start at once.
	Placed bool
	// Where names the nodes and GPUs it would get, in words.
	Where string
	// GPUModels are the models of the GPUs it would get, each once, sorted.
	GPUModels []string
	// Preempts is how many running jobs would be stopped to make room for it.
	Preempts int
	// Reason says why it would wait, when it would.
	Reason string
	// Queued is how many jobs wait in the queue now.
	Queued int
	// Nodes is how many ready nodes the scheduler looked at.
	Nodes int
	// Fleet lists the kinds of GPU those nodes have, by model and memory.
	Fleet []GPUKind
}

// GPUKind is one model of GPU in the fleet, with the MIG profiles configured on it.
type GPUKind struct {
	Model       string
	MemoryMiB   int64
	MIGProfiles []MIGKind
}

// MIGKind is a MIG profile configured on some GPU of a kind.
type MIGKind struct {
	Profile   string
	MemoryMiB int64
}

// Preview asks the scheduler what it would do with job were it submitted now: the
// plan over the snapshot that the next pass would take, with job queued last. It
// changes nothing, so any replica may answer it.
func (s *Service) Preview(ctx context.Context, job models.Job) (PlacementPreview, error) {
	snap := Snapshot{Now: s.now().UTC(), Teams: map[int64]string{}}
	var err error
	if snap.Queue, err = s.store.QueuedJobs(ctx, queueLimit); err != nil {
		return PlacementPreview{}, fmt.Errorf("preview placement: %w", err)
	}
	if err := s.addCluster(ctx, &snap); err != nil {
		return PlacementPreview{}, fmt.Errorf("preview placement: %w", err)
	}
	out := PlacementPreview{Queued: len(snap.Queue), Nodes: len(snap.Nodes), Fleet: fleetOf(snap)}
	job.ID, job.State, job.SubmittedAt = previewJobID, models.JobQueued, snap.Now
	snap.Queue = append(snap.Queue, job)
	plan := s.sched.Plan(snap)
	for _, p := range plan.Placements {
		if p.JobID == previewJobID {
			out.Placed = true
			out.Where, out.GPUModels = describePreview(snap, p)
		}
	}
	for _, pr := range plan.Preemptions {
		if pr.For == previewJobID {
			out.Preempts++
		}
	}
	if !out.Placed {
		out.Reason = plan.Waiting[previewJobID]
	}
	return out, nil
}

// describePreview says where p would put the job, e.g. "node a: 2 × A100-80GB", and on
// which GPU models.
func describePreview(snap Snapshot, p Placement) (string, []string) {
	names := map[int64]string{}
	model := map[string]string{}
	for _, n := range snap.Nodes {
		names[n.ID] = n.Name
		for _, g := range n.GPUs {
			model[g.UUID] = g.Model
		}
	}
	var where, gpuModels []string
	for _, r := range p.Replicas {
		counts := map[string]int{}
		var parts []string
		for _, g := range r.GPUs {
			m := model[g.UUID]
			if !slices.Contains(gpuModels, m) {
				gpuModels = append(gpuModels, m)
			}
			switch {
			case g.MIGProfile != "":
				parts = append(parts, "MIG "+g.MIGProfile+" of one "+m)
			case g.Milli < 1000:
				// As the form asks for a share: 0.25, not the 250 milli-GPU it is held in.
				parts = append(parts, strconv.FormatFloat(float64(g.Milli)/1000, 'f', -1, 64)+" of one "+m)
			default:
				counts[m]++
			}
		}
		for _, m := range slices.Sorted(maps.Keys(counts)) {
			parts = append(parts, fmt.Sprintf("%d × %s", counts[m], m))
		}
		if len(parts) == 0 {
			parts = append(parts, "no GPU")
		}
		where = append(where, "node "+names[r.NodeID]+": "+strings.Join(parts, ", "))
	}
	slices.Sort(gpuModels)
	return strings.Join(where, "; "), gpuModels
}

// fleetOf lists the GPU kinds of the snapshot's nodes, sorted by model and memory.
func fleetOf(snap Snapshot) []GPUKind {
	type key struct {
		model string
		mem   int64
	}
	kinds := map[key]*GPUKind{}
	var keys []key
	for _, n := range snap.Nodes {
		for _, g := range n.GPUs {
			k := key{g.Model, g.MemoryMiB}
			kind, ok := kinds[k]
			if !ok {
				kind = &GPUKind{Model: g.Model, MemoryMiB: g.MemoryMiB}
				kinds[k] = kind
				keys = append(keys, k)
			}
			for _, m := range g.MIG {
				if !slices.ContainsFunc(kind.MIGProfiles, func(have MIGKind) bool { return have.Profile == m.Profile }) {
					kind.MIGProfiles = append(kind.MIGProfiles, MIGKind{Profile: m.Profile, MemoryMiB: m.MemoryMiB})
				}
			}
		}
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(strings.Compare(a.model, b.model), cmp.Compare(a.mem, b.mem)) })
	out := make([]GPUKind, len(keys))
	for i, k := range keys {
		out[i] = *kinds[k]
		slices.SortFunc(out[i].MIGProfiles, func(a, b MIGKind) int {
			return cmp.Or(cmp.Compare(a.MemoryMiB, b.MemoryMiB), strings.Compare(a.Profile, b.Profile))
		})
	}
	return out
}
