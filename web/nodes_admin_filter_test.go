package web_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

var nodeRow = regexp.MustCompile(`<tr data-node="([^"]+)">`)

// The console's nodes page lists a hundred nodes a page, narrowed by a part of the name
// (any letter case), a state and a pool; its links keep the filter; a page past the end shows
// the last; a filter that matches nothing says so; a bad state or page is a 400 naming it.
func TestNodesPageFiltersAndPages(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newDispatchSite(t, st)
		ctx := context.Background()
		edge := &models.NodePool{Name: "edge", Provider: "static", CapacityType: models.CapacityOwned}
		if err := st.CreateNodePool(ctx, edge); err != nil {
			t.Fatal(err)
		}
		for i := range 250 {
			state := models.NodeReady
			if i%50 == 7 {
				state = models.NodeCordoned
			}
			n := &models.Node{Name: fmt.Sprintf("node-%03d", i), State: state, Runtime: "process", Labels: "{}"}
			if i >= 240 {
				n.PoolID = &edge.ID
			}
			if err := st.CreateNode(ctx, n, nil); err != nil {
				t.Fatal(err)
			}
		}
		removedAt := time.Now().UTC()
		if err := st.CreateNode(ctx, &models.Node{Name: "node-01x", State: models.NodeDown, Runtime: "process", Labels: "{}", RemovedAt: &removedAt}, nil); err != nil {
			t.Fatal(err)
		}
		admin := s.signIn("admin", s.password)
		for _, tc := range []struct {
			path, count string
			first, last string // the first and last node listed
			prev, next  string // the pager's links, "" for none
		}{
			{"/admin/nodes", "Nodes 1–100 of 250", "node-000", "node-099", "", "/admin/nodes?page=2"},
			{"/admin/nodes?page=3", "Nodes 201–250 of 250", "node-200", "node-249", "/admin/nodes?page=2", ""},
			{"/admin/nodes?page=9", "Nodes 201–250 of 250", "node-200", "node-249", "/admin/nodes?page=2", ""},
			{"/admin/nodes?name=NODE-01", "Nodes 1–10 of 10", "node-010", "node-019", "", ""},
			{"/admin/nodes?state=cordoned", "Nodes 1–5 of 5", "node-007", "node-207", "", ""},
			{"/admin/nodes?state=ready&page=2", "Nodes 101–200 of 245", "node-102", "node-203", "/admin/nodes?state=ready", "/admin/nodes?page=3&state=ready"},
			{"/admin/nodes?pool=edge", "Nodes 1–10 of 10", "node-240", "node-249", "", ""},
			{"/admin/nodes?pool=-&name=node-2", "Nodes 1–40 of 40", "node-200", "node-239", "", ""},
		} {
			body := s.mustGet(admin, tc.path)
			rows := nodeRow.FindAllStringSubmatch(body, -1)
			count := regexp.MustCompile(`data-testid="nodes-count">([^<]+)<`).FindStringSubmatch(body)
			if len(rows) == 0 || count == nil || count[1] != tc.count || rows[0][1] != tc.first || rows[len(rows)-1][1] != tc.last {
				t.Errorf("%s: %d rows from %v, count %v; want %s, %s to %s", tc.path, len(rows), rows[:min(len(rows), 1)], count, tc.count, tc.first, tc.last)
			}
			for rel, want := range map[string]string{"prev": tc.prev, "next": tc.next} {
				m := regexp.MustCompile(`href="([^"]*)" rel="` + rel + `"`).FindStringSubmatch(body)
				if got := ""; m != nil {
					got = html.UnescapeString(m[1])
					if got != want {
						t.Errorf("%s: the %s link goes to %s, want %q", tc.path, rel, got, want)
					}
				} else if want != "" {
					t.Errorf("%s: no %s link, want one to %s", tc.path, rel, want)
				}
			}
		}
		// A row's action goes back to the page it was taken on, and nowhere but the nodes page.
		if body := s.mustGet(admin, "/admin/nodes?state=ready&page=2"); !strings.Contains(body, `<input type="hidden" name="back" value="/admin/nodes?page=2&amp;state=ready">`) {
			t.Errorf("the rows' actions do not say where to come back to")
		}
		token := s.csrf(admin, "/admin/nodes")
		for node, back := range map[string]string{
			"node-102": "/admin/nodes?page=2&state=ready", "node-103": "//evil.example/admin/nodes", "node-104": "/admin/people?page=2",
		} {
			res, _ := s.form(admin, token, "/admin/nodes/"+node+"/state", "state", "cordoned", "back", back)
			want := "/admin/nodes?notice=Node+" + node + "+is+cordoned."
			if node == "node-102" {
				want = "/admin/nodes?page=2&state=ready&notice=Node+" + node + "+is+cordoned."
			}
			if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != want {
				t.Errorf("cordon with back %q = %d to %q, want %q", back, res.StatusCode, res.Header.Get("Location"), want)
			}
		}
		// Showing removed nodes keeps the filter, and so does the form while they show.
		body := s.mustGet(admin, "/admin/nodes?name=node-01")
		if !strings.Contains(body, `<a href="/admin/nodes?name=node-01&amp;removed=1" data-testid="removed-toggle">Show removed (1)</a>`) {
			t.Errorf("the removed toggle forgets the filter: %s", body)
		}
		body = s.mustGet(admin, "/admin/nodes?name=node-01&removed=1")
		if rows := nodeRow.FindAllStringSubmatch(body, -1); len(rows) != 11 || !strings.Contains(body, `<input type="hidden" name="removed" value="1">`) {
			t.Errorf("removed nodes shown under a filter: %d rows; the form keeps removed=1: %v", len(rows), strings.Contains(body, `name="removed"`))
		}
		if body := s.mustGet(admin, "/admin/nodes?name=zzz"); len(nodeRow.FindAllString(body, -1)) != 0 || !strings.Contains(body, `data-testid="nodes-none">No node matches the filter. <a href="/admin/nodes">List every node</a>.`) {
			t.Errorf("a filter that matches nothing: %s", body)
		}
		for path, want := range map[string]string{
			"/admin/nodes?state=busy": "State: &#34;busy&#34; is not one of ready, draining, cordoned, lost, down: pick one from the list.",
			"/admin/nodes?page=0":     "Page: &#34;0&#34; is not a page number, a whole number from 1; follow the page&#39;s own links.",
			"/admin/nodes?pool=core":  "Pool: there is no pool &#34;core&#34;: pick one from the list.",
		} {
			if res, body := s.send(admin, "GET", path, "", nil); res.StatusCode != http.StatusBadRequest || !strings.Contains(body, want) {
				t.Errorf("%s = %d, want 400 saying %s: %s", path, res.StatusCode, want, errorSection.FindString(body))
			}
		}
	})
}
