package handlers

import (
	"strings"

	"github.com/gantry-gpu/gantry/models"
)

// placementText says a project's placement policy in words, for job and project pages.
func placementText(p *models.Project) string {
	pools, regions, err := p.PlacementLists()
	if err != nil {
		return "unreadable placement policy: " + err.Error()
	}
	var parts []string
	if len(pools) > 0 {
		parts = append(parts, "pools "+strings.Join(pools, ", "))
	}
	if len(regions) > 0 {
		parts = append(parts, "regions "+strings.Join(regions, ", "))
	}
	if p.ConfidentialOnly {
		parts = append(parts, "confidential-computing nodes only")
	}
	if len(parts) == 0 {
		return "any node (project " + p.Name + " has no placement policy)"
	}
	return "project " + p.Name + " runs only on " + strings.Join(parts, "; ")
}
