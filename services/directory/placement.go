package directory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// Placement is a project's placement policy: the pools and regions its jobs may run in
// (empty: any) and whether only nodes in confidential-computing mode will do.
type Placement struct {
	Pools            []string `json:"pools"`
	Regions          []string `json:"regions"`
	ConfidentialOnly bool     `json:"confidential_only"`
}

var regionRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// PlacementOf reads a project's placement policy.
func PlacementOf(p *models.Project) (Placement, error) {
	pools, regions, err := p.PlacementLists()
	return Placement{Pools: pools, Regions: regions, ConfidentialOnly: p.ConfidentialOnly}, err
}

// SetPlacement sets the placement policy of the project called name, audited with what
// it was. Pools must exist; the scheduler applies the policy from its next pass, to jobs
// waiting and to new ones (running jobs stay where they are).
func (s *Service) SetPlacement(ctx context.Context, name string, pl Placement) (*models.Project, error) {
	slices.Sort(pl.Pools)
	slices.Sort(pl.Regions)
	pl.Pools, pl.Regions = slices.Compact(pl.Pools), slices.Compact(pl.Regions)
	for _, r := range pl.Regions {
		if !regionRE.MatchString(r) {
			return nil, models.Invalid("regions", "%q is not a region: write regions as pools name them, e.g. eu-west-1, separated by commas", r)
		}
	}
	var p *models.Project
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		var err error
		if p, err = tx.ProjectByName(ctx, name); errors.Is(err, store.ErrNotFound) {
			return &NotFoundError{Kind: "project", Name: name}
		} else if err != nil {
			return err
		}
		for _, pool := range pl.Pools {
			if _, err := tx.NodePoolByName(ctx, pool); errors.Is(err, store.ErrNotFound) {
				return models.Invalid("pools", "there is no pool %q", pool)
			} else if err != nil {
				return err
			}
		}
		before, err := PlacementOf(p)
		if err != nil {
			return err
		}
		p.AllowedPools, p.AllowedRegions, p.ConfidentialOnly = jsonList(pl.Pools), jsonList(pl.Regions), pl.ConfidentialOnly
		if err := tx.UpdateProject(ctx, p); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "project.placement_changed", ObjectType: "project", ObjectID: name, ProjectID: &p.ID,
			Detail: map[string]Placement{"from": before, "to": pl}})
	})
	if err != nil {
		return nil, fmt.Errorf("set the placement policy of %s: %w", name, err)
	}
	return p, nil
}

// jsonList is a list as the project's columns keep it: "" for none.
func jsonList(l []string) string {
	if len(l) == 0 {
		return ""
	}
	b, _ := json.Marshal(l)
	return string(b)
}
