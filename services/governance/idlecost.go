package governance

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
)

// IdleCost is what one project's GPUs cost over a period and how much of it paid for
// GPUs its jobs held but left idle.
type IdleCost struct {
	ProjectID int64
	Project   string
	// GPUMicros is what the project's jobs were charged for GPUs; MeasuredMicros the
	// part charged to jobs with GPU telemetry, which IdleMicros is a share of.
	GPUMicros, MeasuredMicros, IdleMicros int64
	// GPUMinutes and IdleMinutes are the telemetry the shares come from.
	GPUMinutes, IdleMinutes int64
}

// IdlePercent is the idle share of the measured GPU time.
func (c IdleCost) IdlePercent() float64 {
	if c.GPUMinutes == 0 {
		return 0
	}
	return 100 * float64(c.IdleMinutes) / float64(c.GPUMinutes)
}

// IdleCosts prices allocated-but-idle GPU time over the days [from, to): each job's GPU
// charge times the share of its GPU-minutes that stayed below the idle utilisation,
// summed per project (projectIDs, or every project when nil), most idle cost first.
// A job without telemetry counts in GPUMicros but not in the measured part.
func (s *Service) IdleCosts(ctx context.Context, from, to time.Time, projectIDs []int64) ([]IdleCost, error) {
	projects, err := s.store.Projects(ctx)
	if err != nil {
		return nil, err
	}
	var out []IdleCost
	for _, p := range projects {
		if projectIDs != nil && !slices.Contains(projectIDs, p.ID) {
			continue
		}
		rows, err := s.acc.Rollup(ctx, accounting.Query{By: "job", From: from, To: to, ProjectIDs: []int64{p.ID},
			Resources: []string{models.ResourceGPU}, ChargedOnly: true})
		if err != nil {
			return nil, fmt.Errorf("idle cost of project %s: %w", p.Name, err)
		}
		c := IdleCost{ProjectID: p.ID, Project: p.Name}
		var jobs []int64
		charged := map[int64]int64{}
		for _, r := range rows {
			c.GPUMicros += r.AmountMicros
			if r.Key != 0 {
				jobs, charged[r.Key] = append(jobs, r.Key), charged[r.Key]+r.AmountMicros
			}
		}
		if c.GPUMicros == 0 {
			continue
		}
		minutes, err := s.idle.JobsIdleMinutes(ctx, jobs, from, to, s.thresholds())
		if err != nil {
			return nil, fmt.Errorf("idle cost of project %s: %w", p.Name, err)
		}
		for _, j := range jobs {
			m, ok := minutes[j]
			if !ok || m.Total == 0 {
				continue
			}
			c.MeasuredMicros += charged[j]
			c.IdleMicros += (charged[j]*m.Idle + m.Total/2) / m.Total // rounded to the micro-unit
			c.GPUMinutes += m.Total
			c.IdleMinutes += m.Idle
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b IdleCost) int {
		if a.IdleMicros != b.IdleMicros {
			return cmp.Compare(b.IdleMicros, a.IdleMicros)
		}
		if a.GPUMicros != b.GPUMicros {
			return cmp.Compare(b.GPUMicros, a.GPUMicros)
		}
		return cmp.Compare(a.Project, b.Project)
	})
	return out, nil
}
