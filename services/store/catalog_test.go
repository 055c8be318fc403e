package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// certifiedImages adds a certified catalog image for each name, reg.example/NAME:1.
func certifiedImages(t *testing.T, s *store.Store, names ...string) []*models.Image {
	t.Helper()
	var imgs []*models.Image
	for _, name := range names {
		img := &models.Image{Name: name, Reference: "reg.example/" + name + ":1", Status: models.ImageCertified}
		if err := s.CreateImage(context.Background(), img); err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
	}
	return imgs
}

func TestNodeImages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		first := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
		var nodes []*models.Node
		for _, name := range []string{"gpu-1", "gpu-2"} {
			n := &models.Node{Name: name, State: models.NodeReady, Runtime: "podman"}
			if err := s.CreateNode(ctx, n, nil); err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, n)
		}
		imgs := certifiedImages(t, s, "torch", "jax", "tf")
		held := func() map[[2]int64]time.Time {
			t.Helper()
			rows, err := s.NodeImages(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out := map[[2]int64]time.Time{}
			for _, r := range rows {
				out[[2]int64{r.NodeID, r.ImageID}] = r.PulledAt.UTC()
			}
			return out
		}
		if err := s.ReplaceNodeImages(ctx, nodes[0].ID, []int64{imgs[0].ID, imgs[1].ID}, first); err != nil {
			t.Fatal(err)
		}
		if err := s.ReplaceNodeImages(ctx, nodes[1].ID, []int64{imgs[0].ID}, first); err != nil {
			t.Fatal(err)
		}
		later := first.Add(time.Hour)
		if err := s.ReplaceNodeImages(ctx, nodes[0].ID, []int64{imgs[1].ID, imgs[2].ID}, later); err != nil {
			t.Fatal(err)
		}
		got := held()
		want := map[[2]int64]time.Time{
			{nodes[0].ID, imgs[1].ID}: first, {nodes[0].ID, imgs[2].ID}: later, {nodes[1].ID, imgs[0].ID}: first,
		}
		if len(got) != len(want) {
			t.Fatalf("node images = %v, want %v", got, want)
		}
		for k, at := range want {
			if !got[k].Equal(at) {
				t.Errorf("node %d image %d pulled at %v, want %v (all: %v)", k[0], k[1], got[k], at, got)
			}
		}
		if err := s.ReplaceNodeImages(ctx, nodes[0].ID, nil, later); err != nil {
			t.Fatal(err)
		}
		if got := held(); len(got) != 1 {
			t.Fatalf("after the node reported none: %v", got)
		}
	})
}

// ImageUses counts the jobs per catalog image submitted at or after a time: not older
// ones, not those that named a reference outside the catalog.
func TestImageUses(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u, p := fixture(t, s)
		since := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
		imgs := certifiedImages(t, s, "torch", "jax", "tf")
		submit := func(img *int64, at time.Time) {
			t.Helper()
			j := &models.Job{Name: "train", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research", ImageID: img, SubmittedAt: at}
			if err := s.CreateJob(ctx, j, "user:ada"); err != nil {
				t.Fatal(err)
			}
		}
		torch, jax := &imgs[0].ID, &imgs[1].ID
		for range 3 {
			submit(torch, since.Add(time.Hour))
		}
		submit(torch, since)
		submit(torch, since.Add(-time.Second))
		submit(jax, since.Add(24*time.Hour))
		submit(jax, since.Add(-24*time.Hour))
		submit(nil, since.Add(time.Hour))
		uses, err := s.ImageUses(ctx, since)
		if err != nil {
			t.Fatal(err)
		}
		if len(uses) != 2 || uses[*torch] != 4 || uses[*jax] != 1 {
			t.Errorf("ImageUses = %v, want torch %d: 4 and jax %d: 1", uses, *torch, *jax)
		}
	})
}
