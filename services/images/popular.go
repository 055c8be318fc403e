package images

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// Docker and podman nodes pull ahead, beside the images an admin marked, the images
// that many recent jobs ran in: the next job most likely needs one of them.
const (
	// PopularWindow is how far back jobs count.
	PopularWindow = 7 * 24 * time.Hour
	// PopularAtLeast is how many jobs in the window make an image popular.
	PopularAtLeast = 5
	// PopularTop bounds how many images are pulled for being popular, the most used
	// first: each is disk on every container node.
	PopularTop = 5
)

// Popular returns the catalog's images pulled ahead at now for their use (Popular of
// the whole catalog), with how many jobs of the window ran in each.
func (s *Service) Popular(ctx context.Context, now time.Time) (map[int64]int, error) {
	imgs, err := s.store.Images(ctx)
	if err != nil {
		return nil, err
	}
	uses, err := s.store.ImageUses(ctx, PopularSince(now))
	if err != nil {
		return nil, err
	}
	return Popular(imgs, uses), nil
}

// PopularSince is where the window that judges popularity at now starts.
func PopularSince(now time.Time) time.Time { return now.Add(-PopularWindow) }

// Popular returns, of the catalog imgs, the images pulled ahead for their use, with
// how many jobs of the window ran in each (uses, by image id): at least
// PopularAtLeast, the PopularTop most used (ties by name), never one deprecated or
// one without a reference to pull.
func Popular(imgs []models.Image, uses map[int64]int) map[int64]int {
	var cands []models.Image
	for _, img := range imgs {
		if uses[img.ID] >= PopularAtLeast && img.Reference != "" && !img.Builtin && img.Status != models.ImageDeprecated {
			cands = append(cands, img)
		}
	}
	slices.SortFunc(cands, func(a, b models.Image) int {
		return cmp.Or(cmp.Compare(uses[b.ID], uses[a.ID]), cmp.Compare(a.Name, b.Name))
	})
	out := map[int64]int{}
	for _, img := range cands[:min(len(cands), PopularTop)] {
		out[img.ID] = uses[img.ID]
	}
	return out
}
