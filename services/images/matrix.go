package images

import (
	"context"
	"fmt"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/slurm"
	"github.com/gantry-gpu/gantry/services/store"
)

// Matrix says which images run on which nodes given their runtimes and driver versions.
type Matrix struct {
	Nodes []models.Node
	Rows  []MatrixRow
}

// MatrixRow is one image and its compatibility with each node, in Matrix.Nodes
// order, and the nodes that hold it pulled (as their agents reported).
type MatrixRow struct {
	Image    models.Image
	Cells    []Compat
	PulledOn []string
}

// CompatibilityMatrix judges every catalog image matching f against every node.
func (s *Service) CompatibilityMatrix(ctx context.Context, f store.ImageFilter) (Matrix, error) {
	if err := checkFilter(f); err != nil {
		return Matrix{}, err
	}
	imgs, err := s.store.ImagesMatching(ctx, f)
	if err != nil {
		return Matrix{}, err
	}
	nodes, err := s.store.Nodes(ctx)
	if err != nil {
		return Matrix{}, fmt.Errorf("compatibility matrix: %w", err)
	}
	held, err := s.store.NodeImages(ctx)
	if err != nil {
		return Matrix{}, fmt.Errorf("compatibility matrix: %w", err)
	}
	plugins, err := s.containerPools(ctx)
	if err != nil {
		return Matrix{}, fmt.Errorf("compatibility matrix: %w", err)
	}
	pulled := map[int64]map[int64]bool{} // image -> nodes
	for _, h := range held {
		if pulled[h.ImageID] == nil {
			pulled[h.ImageID] = map[int64]bool{}
		}
		pulled[h.ImageID][h.NodeID] = true
	}
	m := Matrix{Nodes: nodes, Rows: make([]MatrixRow, len(imgs))}
	for i, img := range imgs {
		row := MatrixRow{Image: img, Cells: make([]Compat, len(nodes))}
		for j, n := range nodes {
			switch {
			case img.Builtin:
				row.Cells[j] = plainCompatibility(n.Runtime)
			case !runsContainers(n, plugins):
				row.Cells[j] = Compat{CompatNone, "a " + n.Runtime + " node runs plain commands only"}
			default:
				row.Cells[j] = Compatibility(img.CUDAVersion, img.MinDriver, n.DriverVersion)
			}
			if pulled[img.ID][n.ID] {
				row.PulledOn = append(row.PulledOn, n.Name)
			}
		}
		m.Rows[i] = row
	}
	return m, nil
}

// plainCompatibility says whether a node runs the built-in plain-command entry: its jobs
// run the command on the node itself, with the node's driver, so only the runtime
// matters: docker and podman start container images only (as the scheduler places).
func plainCompatibility(runtime string) Compat {
	if runtime == agentapi.RuntimeDocker || runtime == agentapi.RuntimePodman {
		return Compat{CompatNone, "a " + runtime + " node runs container images only"}
	}
	return Compat{CompatFull, "runs the command on the node itself, with its own driver"}
}

// runsContainers says whether a node starts container images, as the scheduler places
// them: the process runtime runs plain commands only, and so does a Slurm node unless
// its pool names a container plugin.
func runsContainers(n models.Node, plugins map[int64]bool) bool {
	switch n.Runtime {
	case agentapi.RuntimeProcess:
		return false
	case models.RuntimeSlurm:
		return n.PoolID != nil && plugins[*n.PoolID]
	}
	return true
}

// containerPools are the Slurm pools whose configuration names a container plugin.
func (s *Service) containerPools(ctx context.Context) (map[int64]bool, error) {
	pools, err := s.store.NodePools(ctx)
	if err != nil {
		return nil, err
	}
	plugins := map[int64]bool{}
	for _, p := range pools {
		if p.Provider != "slurm" {
			continue
		}
		// A configuration that does not parse submits nothing, as in dispatch.
		if cfg, err := slurm.ParseConfig(p.ProviderConfig); err == nil && cfg.Container != "" {
			plugins[p.ID] = true
		}
	}
	return plugins, nil
}
