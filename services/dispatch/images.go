package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/images"
	"github.com/gantry-gpu/gantry/services/store"
)

// catalogRefresh is how long heartbeats reuse what they read of the image catalog.
const catalogRefresh = 15 * time.Second

// popularRefresh is how long they reuse which images are popular: counting a week of
// jobs costs more than reading the catalog, and popularity moves slowly.
const popularRefresh = 5 * time.Minute

// catalogCache keeps, between heartbeats, the images a docker or podman node
// should hold before a job needs them (those the catalog marks for pre-pull and
// those many recent jobs ran in, images.Popular), and the catalog's image ids by
// reference, which a node's report of its images names.
type catalogCache struct {
	mu        sync.Mutex
	readAt    time.Time
	prePull   []string
	ids       map[string]int64
	popularAt time.Time
	popular   map[int64]int
}

func (c *catalogCache) read(ctx context.Context, st *store.Store, now time.Time) ([]string, map[string]int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.readAt.IsZero() && now.Sub(c.readAt) < catalogRefresh && !now.Before(c.readAt) {
		return c.prePull, c.ids, nil
	}
	imgs, err := st.Images(ctx)
	if err != nil {
		return nil, nil, err
	}
	if c.popularAt.IsZero() || now.Sub(c.popularAt) >= popularRefresh || now.Before(c.popularAt) {
		uses, err := st.ImageUses(ctx, images.PopularSince(now))
		if err != nil {
			return nil, nil, err
		}
		c.popular, c.popularAt = images.Popular(imgs, uses), now
	}
	c.prePull, c.ids = nil, map[string]int64{}
	for _, img := range imgs {
		if img.Reference == "" || img.Builtin {
			continue
		}
		c.ids[img.Reference] = img.ID
		if img.Status != models.ImageDeprecated && (img.PrePull || c.popular[img.ID] > 0) {
			c.prePull = append(c.prePull, img.Reference)
		}
	}
	c.readAt = now
	return c.prePull, c.ids, nil
}

// containerNode reports whether the node runs its jobs in containers, which can be pulled ahead.
func containerNode(n *models.Node) bool {
	return n.Runtime == agentapi.RuntimeDocker || n.Runtime == agentapi.RuntimePodman
}

// imageIDs are the catalog images among the references a node reported; the rest
// (images of jobs that named a reference outside the catalog) are not followed.
func imageIDs(r *agentapi.ImageReport, ids map[string]int64) []int64 {
	out := []int64{}
	for _, ref := range r.Pulled {
		if id, ok := ids[ref]; ok {
			out = append(out, id)
		}
	}
	return out
}
