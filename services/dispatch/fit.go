package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/scheduler"
)

// specField names the field of the job spec (POST /api/v1/jobs) a person sets a
// scheduler request's field with.
func specField(f string) string {
	switch f {
	case "replicas":
		return "replicas"
	case "class":
		return "priority_class"
	case "expected_runtime":
		return "expected_run_sec"
	case "gpu_models":
		return "resources.gpu_model"
	case "ram_mib":
		return "resources.memory_mib"
	case "image":
		return "image"
	}
	return "resources." + f
}

// CheckFit refuses a job that could never run: one that no node Gantry knows (in any
// state: cordoned, draining, lost and down nodes may serve again, removed ones not
// unless they join again; spot nodes only for jobs that allow spot) nor any of more
// (the nodes pools can still add) could hold.
// Only nodes whose runtime starts the job count: a container image needs docker or
// podman, a plain command the process runtime. The *models.FieldError names the job
// spec's field (image, when no node runs the job's kind) and the largest offer. With
// no node at all the job is let through: it waits for the first to join.
func (s *Service) CheckFit(ctx context.Context, job models.Job, more []scheduler.Node) error {
	nodes, err := s.store.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("check the fit of job %s: %w", job.Name, err)
	}
	snap := Snapshot{Now: s.now().UTC()}
	if _, err := s.addNodes(ctx, &snap, nodes); err != nil {
		return fmt.Errorf("check the fit of job %s: %w", job.Name, err)
	}
	offer := make([]scheduler.Node, 0, len(snap.Nodes)+len(more))
	for _, n := range snap.Nodes {
		if n.Spot && !job.Spot {
			continue
		}
		offer = append(offer, schedNode(n))
	}
	offer = append(offer, more...)
	if len(offer) == 0 {
		return nil
	}
	req := schedJob(&job, &snap).Request
	// The largest offer is that of the nodes that start the job; when there are none,
	// the offer of all says so through the image.
	if starts := slices.DeleteFunc(slices.Clone(offer), func(n scheduler.Node) bool { return !n.Runs.Starts(req.Container) }); len(starts) > 0 {
		offer = starts
	}
	cfg := scheduler.DefaultConfig()
	cfg.Classes = []scheduler.PriorityClass{{Name: job.PriorityClass, Weight: 1}}
	err = scheduler.ValidateRequest(req, cfg, scheduler.OfferOf(offer))
	var fe *scheduler.FieldError
	if errors.As(err, &fe) {
		msg := fe.Message
		if fe.Field == "image" && req.Container {
			msg += plainSlurmPools(snap.Nodes)
		}
		return models.Invalid(specField(fe.Field), "%s", msg)
	}
	return err
}

// plainSlurmPools says which Slurm pools could run a container image with a
// container plugin, for the refusal of a job with one; "" when there are none.
func plainSlurmPools(nodes []NodeCapacity) string {
	var pools []string
	for _, n := range nodes {
		if n.WholeGPUs && n.Runs == scheduler.RunsPlain && n.Pool != "" && !slices.Contains(pools, n.Pool) {
			pools = append(pools, n.Pool)
		}
	}
	if len(pools) == 0 {
		return ""
	}
	slices.Sort(pools)
	return fmt.Sprintf(" (Slurm pool %s runs images only through a container plugin, which it does not configure: container: pyxis in its provider_config)", strings.Join(pools, ", "))
}
