package dispatch_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	catalog "github.com/gantry-gpu/gantry/services/images"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A docker or podman node's heartbeat answer lists the catalog's pre-pull images
// (not a process node's); what the node reports it holds is recorded per catalog image.
func TestPrePullAndPulledImages(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		images := map[string]*models.Image{}
		for _, img := range []models.Image{
			{Name: "torch", Reference: "reg.example/torch:2", Status: models.ImageCertified, PrePull: true},
			{Name: "old", Reference: "reg.example/old:1", Status: models.ImageDeprecated, PrePull: true},
			{Name: "jax", Reference: "reg.example/jax:1", Status: models.ImageUncertified},
		} {
			if err := st.CreateImage(e.ctx, &img); err != nil {
				t.Fatal(err)
			}
			images[img.Name] = &img
		}
		plain := e.join("plain-1", "")
		token, _, err := dispatch.CreateJoinToken(e.ctx, st, e.audit, e.clock.now(), dispatch.JoinTokenSpec{Name: "podman", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.svc.Join(e.ctx, agentapi.JoinRequest{JoinToken: token, Name: "box-1", Runtime: agentapi.RuntimePodman, CPUMilli: 8000, MemoryMiB: 32768})
		if err != nil {
			t.Fatal(err)
		}
		box, err := e.svc.Authenticate(e.ctx, res.Credential)
		if err != nil {
			t.Fatal(err)
		}
		beat := func(n *models.Node, req agentapi.HeartbeatRequest) (agentapi.HeartbeatResponse, error) {
			t.Helper()
			fresh, err := st.NodeByID(e.ctx, n.ID)
			if err != nil {
				t.Fatal(err)
			}
			return e.svc.Heartbeat(e.ctx, fresh, req)
		}
		if got := e.heartbeat(plain); len(got.PrePull) != 0 {
			t.Errorf("a process node was asked to pre-pull %v", got.PrePull)
		}
		got, err := beat(box, agentapi.HeartbeatRequest{Images: &agentapi.ImageReport{Pulled: []string{"reg.example/torch:2", "reg.example/jax:1", "elsewhere.example/own:1"}}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.PrePull, []string{"reg.example/torch:2"}) {
			t.Errorf("pre-pull = %v, want the certified image marked for it", got.PrePull)
		}
		held := func() []int64 {
			t.Helper()
			rows, err := st.NodeImages(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			var out []int64
			for _, r := range rows {
				if r.NodeID != box.ID {
					t.Errorf("images recorded for node %d: %+v", r.NodeID, r)
				}
				out = append(out, r.ImageID)
			}
			slices.Sort(out)
			return out
		}
		want := []int64{images["torch"].ID, images["jax"].ID}
		slices.Sort(want)
		if h := held(); !slices.Equal(h, want) {
			t.Fatalf("node images = %v, want torch and jax %v", h, want)
		}
		if _, err := beat(box, agentapi.HeartbeatRequest{}); err != nil {
			t.Fatal(err)
		}
		if h := held(); !slices.Equal(h, want) {
			t.Fatalf("a heartbeat without a report changed the node's images: %v", h)
		}
		var fe *models.FieldError
		_, err = beat(box, agentapi.HeartbeatRequest{Images: &agentapi.ImageReport{Pulled: []string{"reg.example/torch:2 --rm"}}})
		if !errors.As(err, &fe) || fe.Field != "images.pulled[0]" {
			t.Fatalf("a malformed report: %v, want a FieldError on images.pulled[0]", err)
		}
		if h := held(); !slices.Equal(h, want) {
			t.Fatalf("a refused report changed the node's images: %v", h)
		}
		if _, err := beat(box, agentapi.HeartbeatRequest{Images: &agentapi.ImageReport{Pulled: []string{}}}); err != nil {
			t.Fatal(err)
		}
		if h := held(); len(h) != 0 {
			t.Fatalf("the node reported none, the server keeps %v", h)
		}

		// A new pre-pull mark reaches the nodes within the catalog's refresh.
		images["jax"].PrePull = true
		if err := st.UpdateImage(e.ctx, images["jax"]); err != nil {
			t.Fatal(err)
		}
		e.clock.advance(20 * time.Second)
		got, err = beat(box, agentapi.HeartbeatRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Sort(got.PrePull); !slices.Equal(got.PrePull, []string{"reg.example/jax:1", "reg.example/torch:2"}) {
			t.Errorf("pre-pull after a new mark = %v", got.PrePull)
		}

		// An image that many recent jobs ran in is pulled ahead too, unmarked; jobs older
		// than the window do not count, and popularity is counted again every few minutes.
		tf := &models.Image{Name: "tf", Reference: "reg.example/tf:1", Status: models.ImageUncertified}
		if err := st.CreateImage(e.ctx, tf); err != nil {
			t.Fatal(err)
		}
		ranIn := func(n int, at time.Time) {
			for range n {
				e.submit("fit", 0, func(j *models.Job) { j.ImageID, j.SubmittedAt = &tf.ID, at })
			}
		}
		ranIn(catalog.PopularAtLeast, e.clock.now().Add(-catalog.PopularWindow-time.Hour))
		ranIn(catalog.PopularAtLeast-1, e.clock.now())
		prePull := func(what string, want ...string) {
			t.Helper()
			got, err := beat(box, agentapi.HeartbeatRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if slices.Sort(got.PrePull); !slices.Equal(got.PrePull, want) {
				t.Errorf("pre-pull %s = %v, want %v", what, got.PrePull, want)
			}
		}
		e.clock.advance(6 * time.Minute)
		prePull("with one job too few in the window", "reg.example/jax:1", "reg.example/torch:2")
		ranIn(1, e.clock.now())
		e.clock.advance(20 * time.Second)
		prePull("before popularity is counted again", "reg.example/jax:1", "reg.example/torch:2")
		e.clock.advance(5 * time.Minute)
		prePull("once the image is popular", "reg.example/jax:1", "reg.example/tf:1", "reg.example/torch:2")
	})
}
