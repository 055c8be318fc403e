package quotas

import (
	"context"
	"sort"

	"github.com/gantry-gpu/gantry/models"
)

// Row is one quota with what its team uses of it now.
type Row struct {
	models.Quota
	Team string
	// UseMilli is the GPU the team holds now under this quota; BorrowedMilli the part of
	// it beyond the guarantee, taken from the cohort.
	UseMilli      int64
	BorrowedMilli int64
	// CPUUseMilli and MemoryUseMiB are the CPU and memory its jobs under this quota hold;
	// the borrowed parts are beyond a CPU or memory guarantee (none without one).
	CPUUseMilli       int64
	CPUBorrowedMilli  int64
	MemoryUseMiB      int64
	MemoryBorrowedMiB int64
}

// Unlimited is a team's use of a model that no quota of its covers.
type Unlimited struct {
	Team     string
	GPUModel string
	UseMilli int64
}

// Overview returns every quota with its current use, by team and model, and the use
// that no quota covers.
func (s *Service) Overview(ctx context.Context) ([]Row, []Unlimited, error) {
	quotas, err := s.store.Quotas(ctx)
	if err != nil {
		return nil, nil, err
	}
	teams, err := s.store.Teams(ctx)
	if err != nil {
		return nil, nil, err
	}
	names := map[int64]string{}
	for _, t := range teams {
		names[t.ID] = t.Name
	}
	use, err := s.use(ctx)
	if err != nil {
		return nil, nil, err
	}
	rows := make([]Row, len(quotas))
	hasQuota := map[int64]bool{}
	for i, q := range quotas {
		u := covered(use, quotas, q)
		rows[i] = Row{Quota: q, Team: names[q.TeamID], UseMilli: u[0], BorrowedMilli: max(0, u[0]-q.NominalMilli),
			CPUUseMilli: u[1], MemoryUseMiB: u[2]}
		if q.CPUMilli > 0 {
			rows[i].CPUBorrowedMilli = max(0, u[1]-q.CPUMilli)
		}
		if q.MemoryMiB > 0 {
			rows[i].MemoryBorrowedMiB = max(0, u[2]-q.MemoryMiB)
		}
		hasQuota[q.TeamID] = true
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Team != rows[j].Team {
			return rows[i].Team < rows[j].Team
		}
		return rows[i].GPUModel < rows[j].GPUModel
	})
	var free []Unlimited
	for k, v := range use {
		// A team with any quota is limited in every model: no quota for a model means none of it.
		if !hasQuota[k.team] && v[0] > 0 {
			free = append(free, Unlimited{Team: names[k.team], GPUModel: k.model, UseMilli: v[0]})
		}
	}
	sort.Slice(free, func(i, j int) bool {
		if free[i].Team != free[j].Team {
			return free[i].Team < free[j].Team
		}
		return free[i].GPUModel < free[j].GPUModel
	})
	return rows, free, nil
}
