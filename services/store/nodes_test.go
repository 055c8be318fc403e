package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A removed node keeps its row, with when it was removed, but node lists and counts
// leave it out unless asked for it; clearing the mark brings it back.
func TestRemovedNodesAreListedOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, name := range []string{"b-gone", "a-live", "c-down"} {
			if err := s.CreateNode(ctx, &models.Node{Name: name, State: models.NodeReady}, nil); err != nil {
				t.Fatal(err)
			}
		}
		down, _ := s.NodeByName(ctx, "c-down")
		down.State = models.NodeDown
		if err := s.SaveNode(ctx, down); err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 11, 30, 9, 15, 0, 0, time.UTC)
		gone, _ := s.NodeByName(ctx, "b-gone")
		gone.State, gone.RemovedAt = models.NodeDown, &at
		if err := s.SaveNode(ctx, gone); err != nil {
			t.Fatal(err)
		}

		names := func(ns []models.Node, err error) []string {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			out := make([]string, len(ns))
			for i, n := range ns {
				out[i] = n.Name
			}
			return out
		}
		if got := names(s.Nodes(ctx)); len(got) != 2 || got[0] != "a-live" || got[1] != "c-down" {
			t.Errorf("Nodes = %v, want a-live and c-down, not the removed b-gone", got)
		}
		if got := names(s.NodesWithRemoved(ctx)); len(got) != 3 || got[1] != "b-gone" {
			t.Errorf("NodesWithRemoved = %v, want all three by name", got)
		}
		if n, err := s.CountNodes(ctx); n != 2 || err != nil {
			t.Errorf("CountNodes = %d, %v; want 2", n, err)
		}
		if n, err := s.CountRemovedNodes(ctx); n != 1 || err != nil {
			t.Errorf("CountRemovedNodes = %d, %v; want 1", n, err)
		}
		got, err := s.NodeByName(ctx, "b-gone")
		if err != nil || got.RemovedAt == nil || !got.RemovedAt.Equal(at) {
			t.Fatalf("the removed node reads back removed at %v, %v; want %s", got.RemovedAt, err, at)
		}

		got.RemovedAt = nil
		if err := s.SaveNode(ctx, got); err != nil {
			t.Fatal(err)
		}
		if n, err := s.CountRemovedNodes(ctx); n != 0 || err != nil {
			t.Errorf("after clearing the mark CountRemovedNodes = %d, %v; want 0", n, err)
		}
		if got := names(s.Nodes(ctx)); len(got) != 3 {
			t.Errorf("after clearing the mark Nodes = %v, want all three", got)
		}
	})
}

// A page of nodes goes on after the name of the page before and keeps to the filter; a
// search reads "_" and "%" as themselves, in any letter case.
func TestNodesPageFollowsNamesAndFilters(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		at := time.Date(2026, 11, 30, 9, 15, 0, 0, time.UTC)
		pool := &models.NodePool{Name: "east", Provider: "static", Template: "{}", ProviderConfig: "{}"}
		if err := s.CreateNodePool(ctx, pool); err != nil {
			t.Fatal(err)
		}
		for _, n := range []models.Node{
			{Name: "node-a", State: models.NodeReady},
			{Name: "node-b", State: models.NodeLost, PoolID: &pool.ID},
			{Name: "node-c", State: models.NodeReady},
			{Name: "node-d", State: models.NodeCordoned},
			{Name: "node-e", State: models.NodeDown, RemovedAt: &at},
			{Name: "Node_X", State: models.NodeReady},
			{Name: "nodexx", State: models.NodeReady},
		} {
			if err := s.CreateNode(ctx, &n, nil); err != nil {
				t.Fatal(err)
			}
		}
		names := func(f store.NodeFilter) string {
			t.Helper()
			ns, err := s.NodesPage(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			out := []string{}
			for _, n := range ns {
				out = append(out, n.Name)
			}
			return strings.Join(out, " ")
		}
		// Names that differ only after "node-" order alike under any collation; the
		// others are compared as sets, as PostgreSQL's collation may order them otherwise.
		for _, tc := range []struct {
			f    store.NodeFilter
			want string
		}{
			{store.NodeFilter{Limit: 2, Name: "node-"}, "node-a node-b"},
			{store.NodeFilter{Limit: 2, Name: "node-", After: "node-b"}, "node-c node-d"},
			{store.NodeFilter{Limit: 2, Name: "node-", After: "node-d"}, ""},
			{store.NodeFilter{Limit: 2, Name: "node-", After: "node-d", WithRemoved: true}, "node-e"},
			{store.NodeFilter{Limit: 10, Name: "NODE-", States: []string{models.NodeLost, models.NodeCordoned}}, "node-b node-d"},
		} {
			if got := names(tc.f); got != tc.want {
				t.Errorf("NodesPage(%+v) = %q, want %q", tc.f, got, tc.want)
			}
		}
		for _, tc := range []struct {
			f    store.NodeFilter
			want []string
		}{
			{store.NodeFilter{Limit: 10, Name: "de_"}, []string{"Node_X"}},
			{store.NodeFilter{Limit: 10, Name: "X"}, []string{"Node_X", "nodexx"}},
			{store.NodeFilter{Limit: 10, Name: "%"}, []string{}},
			{store.NodeFilter{Limit: 10, States: []string{models.NodeReady}}, []string{"Node_X", "node-a", "node-c", "nodexx"}},
			{store.NodeFilter{Limit: 10, States: []string{models.NodeDown}, WithRemoved: true}, []string{"node-e"}},
			{store.NodeFilter{Limit: 10, PoolID: pool.ID}, []string{"node-b"}},
		} {
			got := strings.Fields(names(tc.f))
			slices.Sort(got)
			if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("NodesPage(%+v) = %v, want %v", tc.f, got, tc.want)
			}
		}
	})
}
