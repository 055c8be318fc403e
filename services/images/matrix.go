package images

import (
	"context"
	"fmt"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// Matrix says which images run on which nodes given their driver versions.
type Matrix struct {
	Nodes []models.Node
	Rows  []MatrixRow
}

// MatrixRow is one image and its compatibility with each node, in Matrix.Nodes order.
type MatrixRow struct {
	Image models.Image
	Cells []Compat
}

// CompatibilityMatrix judges every catalog image matching f against every node.
func (s *Service) CompatibilityMatrix(ctx context.Context, f store.ImageFilter) (Matrix, error) {
	imgs, err := s.store.ImagesMatching(ctx, f)
	if err != nil {
		return Matrix{}, err
	}
	nodes, err := s.store.Nodes(ctx)
	if err != nil {
		return Matrix{}, fmt.Errorf("compatibility matrix: %w", err)
	}
	m := Matrix{Nodes: nodes, Rows: make([]MatrixRow, len(imgs))}
	for i, img := range imgs {
		row := MatrixRow{Image: img, Cells: make([]Compat, len(nodes))}
		for j, n := range nodes {
			row.Cells[j] = Compatibility(img.CUDAVersion, img.MinDriver, n.DriverVersion)
		}
		m.Rows[i] = row
	}
	return m, nil
}
