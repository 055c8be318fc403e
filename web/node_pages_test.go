package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

var joinSecret = regexp.MustCompile(`data-testid="join-secret">([^<]+)<`)

// Join tokens from the console: bad input named, the token shown once, a one-time token
// admits one node, a revoked one none.
func TestJoinTokensThroughTheConsole(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		s := newDispatchSite(t, st)
		admin := s.signIn("admin", s.password)
		token := s.csrf(admin, "/admin/join-tokens")
		res, body := s.form(admin, token, "/admin/join-tokens", "name", "rack-3", "expires", "-1h")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Expires: &#34;-1h&#34; is not a lifetime") || !strings.Contains(body, `value="rack-3"`) {
			t.Fatalf("a past expiry = %d", res.StatusCode)
		}
		res, body = s.form(admin, token, "/admin/join-tokens", "name", "rack-3", "expires", "24h", "pool", "ghosts")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Pool: there is no pool &#34;ghosts&#34;") {
			t.Fatalf("a missing pool = %d", res.StatusCode)
		}
		if tokens, _ := st.JoinTokens(ctx); len(tokens) != 0 {
			t.Fatalf("refused input created %d tokens", len(tokens))
		}
		res, body = s.form(admin, token, "/admin/join-tokens", "name", "rack-3", "expires", "24h")
		m := joinSecret.FindStringSubmatch(body)
		if res.StatusCode != http.StatusCreated || m == nil || !strings.Contains(body, "gantry agent --server "+s.srv.URL+" --join-token "+m[1]) {
			t.Fatalf("create = %d; want the token and the agent command once", res.StatusCode)
		}
		if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("the page showing the join token says Cache-Control %q, want no-store", cc)
		}
		if _, body = s.send(admin, "GET", "/admin/join-tokens", "", nil); strings.Contains(body, m[1]) {
			t.Fatal("the token is shown again")
		}
		join := func(name string) error {
			_, err := s.disp.Join(ctx, agentapi.JoinRequest{JoinToken: m[1], Name: name, Runtime: agentapi.RuntimeProcess, CPUMilli: 1000, MemoryMiB: 1024,
				Inventory: gpu.Inventory{Devices: []gpu.Device{}}})
			return err
		}
		if err := join("n1"); err != nil {
			t.Fatal(err)
		}
		if err := join("n2"); !errors.Is(err, dispatch.ErrUnauthorized) {
			t.Fatalf("a second node on a one-time token: %v", err)
		}
		if _, body = s.send(admin, "GET", "/admin/join-tokens", "", nil); !strings.Contains(body, `<td data-testid="status">used</td>`) {
			t.Error("the used token is not shown as used")
		}

		res, body = s.form(admin, token, "/admin/join-tokens", "name", "fleet", "expires", "48h", "reusable", "true")
		wantStatus(t, "create reusable", res, http.StatusCreated)
		m = joinSecret.FindStringSubmatch(body)
		if res, body = s.form(admin, token, "/admin/join-tokens/revoke", "name", "fleet"); res.StatusCode != 200 || !strings.Contains(body, "Revoke join token fleet?") {
			t.Fatalf("revoke without confirmation = %d", res.StatusCode)
		}
		if err := join("n3"); err != nil {
			t.Fatalf("an unconfirmed revoke revoked: %v", err)
		}
		res, _ = s.form(admin, token, "/admin/join-tokens/revoke", "name", "fleet", "confirm", "yes")
		wantStatus(t, "revoke", res, http.StatusSeeOther)
		if err := join("n4"); !errors.Is(err, dispatch.ErrUnauthorized) {
			t.Fatalf("joining with a revoked token: %v", err)
		}
		res, _ = s.form(admin, token, "/admin/join-tokens/revoke", "name", "fleet", "confirm", "yes")
		wantStatus(t, "revoke again", res, http.StatusNotFound)
		_, body = s.send(admin, "GET", "/admin/join-tokens", "", nil)
		if !strings.Contains(body, "join_token.created") || !strings.Contains(body, "join_token.revoked") {
			t.Error("the page does not show the token changes")
		}
	})
}

// Nodes from the console: what a node has, cordon, drain with a deadline (asked first),
// return to service, labels, pool and removal, each checked and audited.
func TestNodesThroughTheConsole(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		s := newDispatchSite(t, st)
		s.join("gpu-1", "2xA100-80GB")
		s.join("gpu-m", "1xA100-40GB:mig=3g.20gb+3g.20gb")
		admin := s.signIn("admin", s.password)
		res, body := s.send(admin, "GET", "/admin/nodes", "", nil)
		if res.StatusCode != 200 || !strings.Contains(body, "2 × A100-80GB (80 GiB)") || !strings.Contains(body, "SIMULATED") || !strings.Contains(body, "MIG: GPU 0 3g.20gb+3g.20gb") {
			t.Fatalf("nodes page = %d; want the GPUs, the MIG layout and SIMULATED", res.StatusCode)
		}
		token := s.csrf(admin, "/admin/nodes")
		state := func(name string) string {
			n, err := st.NodeByName(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			return n.State
		}
		res, _ = s.form(admin, token, "/admin/nodes/gpu-1/state", "state", "cordoned")
		wantStatus(t, "cordon", res, http.StatusSeeOther)
		if state("gpu-1") != models.NodeCordoned {
			t.Fatalf("gpu-1 is %s after cordoning", state("gpu-1"))
		}
		res, body = s.form(admin, token, "/admin/nodes/gpu-1/state", "state", "draining", "drain_for", "soon")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Drain for: &#34;soon&#34; is not a duration") {
			t.Fatalf("a bad drain deadline = %d", res.StatusCode)
		}
		res, body = s.form(admin, token, "/admin/nodes/gpu-1/state", "state", "draining", "drain_for", "30m")
		if res.StatusCode != 200 || !strings.Contains(body, "Drain node gpu-1?") || state("gpu-1") != models.NodeCordoned {
			t.Fatalf("drain without confirmation = %d, node %s", res.StatusCode, state("gpu-1"))
		}
		res, _ = s.form(admin, token, "/admin/nodes/gpu-1/state", "state", "draining", "drain_for", "30m", "confirm", "yes")
		wantStatus(t, "drain", res, http.StatusSeeOther)
		n, _ := st.NodeByName(ctx, "gpu-1")
		if n.State != models.NodeDraining || n.DrainDeadline == nil || n.DrainDeadline.Sub(s.clock.now()) < 29*60e9 {
			t.Fatalf("after draining: %s, deadline %v", n.State, n.DrainDeadline)
		}
		res, _ = s.form(admin, token, "/admin/nodes/gpu-1/state", "state", "ready")
		wantStatus(t, "return to service", res, http.StatusSeeOther)
		if state("gpu-1") != models.NodeReady {
			t.Fatalf("gpu-1 is %s after returning it", state("gpu-1"))
		}
		res, _ = s.form(admin, token, "/admin/nodes/ghost/state", "state", "cordoned")
		wantStatus(t, "cordon a missing node", res, http.StatusNotFound)

		res, body = s.form(admin, token, "/admin/nodes/gpu-1/labels", "labels", "rack=r1\nnot a label")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Labels: line 2 (&#34;not a label&#34;) is not key=value") || !strings.Contains(body, "not a label</textarea>") {
			t.Fatalf("bad labels = %d", res.StatusCode)
		}
		res, _ = s.form(admin, token, "/admin/nodes/gpu-1/labels", "labels", "rack=r1\nzone = eu-west-1a\n")
		wantStatus(t, "labels", res, http.StatusSeeOther)
		if n, _ = st.NodeByName(ctx, "gpu-1"); n.Labels != `{"rack":"r1","zone":"eu-west-1a"}` {
			t.Errorf("labels = %s", n.Labels)
		}
		res, body = s.form(admin, token, "/admin/nodes/gpu-1/pool", "pool", "ghosts")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Pool: there is no pool") {
			t.Fatalf("a missing pool = %d", res.StatusCode)
		}
		_, body = s.send(admin, "GET", "/admin/nodes/gpu-1", "", nil)
		for _, want := range []string{"node.cordoned", "node.draining", "node.ready", "node.labels_changed", "<code class=\"label\">rack=r1</code>"} {
			if !strings.Contains(body, want) && !strings.Contains(s.mustGet(admin, "/admin/nodes"), want) {
				t.Errorf("the node pages lack %s", want)
			}
		}

		res, body = s.form(admin, token, "/admin/nodes/gpu-m/remove")
		if res.StatusCode != 200 || !strings.Contains(body, "Remove node gpu-m?") {
			t.Fatalf("remove without confirmation = %d", res.StatusCode)
		}
		res, _ = s.form(admin, token, "/admin/nodes/gpu-m/remove", "confirm", "yes")
		wantStatus(t, "remove", res, http.StatusSeeOther)
		if loc, _ := url.QueryUnescape(res.Header.Get("Location")); !strings.Contains(loc, "Removed node gpu-m") || state("gpu-m") != models.NodeDown {
			t.Fatalf("after removing: %s, node %s", loc, state("gpu-m"))
		}
	})
}

// mustGet fetches a page and returns its body.
func (s *site) mustGet(c *http.Client, path string) string {
	s.t.Helper()
	res, body := s.send(c, "GET", path, "", nil)
	if res.StatusCode != 200 {
		s.t.Fatalf("GET %s = %d", path, res.StatusCode)
	}
	return body
}
