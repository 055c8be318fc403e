package web_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// On a fleet of many nodes the cluster page counts every node and pool but draws a
// page of nodes at a time (50), narrowed by name, state and pool, and its refresh asks
// for the same page; a GPU's reading shows on the page that draws it.
func TestClusterPageOfAFleet(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := t.Context()
		train := &models.NodePool{Name: "train", Provider: "static", CapacityType: models.CapacityOwned}
		infer := &models.NodePool{Name: "infer", Provider: "static", CapacityType: models.CapacitySpot}
		// Pools without nodes: an elastic one at zero and one no agent has joined yet.
		burst := &models.NodePool{Name: "burst", Provider: "exec", CapacityType: models.CapacityOnDemand, MaxNodes: 4,
			Template: `{"gpu_model": "H100-80GB", "gpus": 8, "cpu_milli": 32000, "memory_mib": 262144}`}
		spare := &models.NodePool{Name: "spare", Provider: "static", CapacityType: models.CapacityOwned}
		for _, p := range []*models.NodePool{train, infer, burst, spare} {
			if err := st.CreateNodePool(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		now := time.Now().UTC()
		// 40 nodes of 8 H100s in train (one cordoned), 20 of 4 L4s in infer, 2 in no pool.
		for i := range 62 {
			n := &models.Node{Name: fmt.Sprintf("node-%03d", i), State: models.NodeReady, Runtime: "process", LastHeartbeatAt: &now}
			gpus, model := 8, "H100-80GB"
			switch {
			case i < 40:
				n.PoolID = &train.ID
			case i < 60:
				n.PoolID, gpus, model = &infer.ID, 4, "L4-24GB"
			default:
				gpus = 0
			}
			if i == 7 {
				n.State = models.NodeCordoned
			}
			var devs []models.GPUDevice
			for g := range gpus {
				devs = append(devs, models.GPUDevice{Index: g, UUID: fmt.Sprintf("GPU-%03d-%d", i, g), Model: model, MemoryMiB: 81559, Healthy: true})
			}
			if err := st.CreateNode(ctx, n, devs); err != nil {
				t.Fatal(err)
			}
			if i == 59 { // on the second page
				if err := st.InsertTelemetry(ctx, []models.TelemetrySample{{NodeID: n.ID, DeviceUUID: "GPU-059-3", At: now, Resolution: models.ResolutionRaw,
					UtilPct: 71, Samples: 1, Reported: models.ReportedUtil}}); err != nil {
					t.Fatal(err)
				}
			}
		}
		olga, _ := s.member("olga")
		get := func(path string, header map[string]string) string {
			t.Helper()
			res, body := s.send(olga, "GET", path, "", header)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d %s", path, res.StatusCode, body)
			}
			return body
		}
		nodeRows := regexp.MustCompile(`<tr data-node="(node-\d+)"`)
		rowsOf := func(body string) []string {
			var names []string
			for _, m := range nodeRows.FindAllStringSubmatch(body, -1) {
				names = append(names, m[1])
			}
			return names
		}

		body := get("/cluster", nil)
		// The capacity is the fleet's: 40×8 + 20×4 GPUs, 61 nodes ready and 1 other.
		for _, want := range []string{`data-testid="gpus">400<`, `data-testid="gpus-free">400<`, `<p class="figure">61</p>`, "ready; 1 other",
			`data-testid="nodes-count">Nodes 1–50 of 62<`, `href="/cluster?page=2" rel="next"`,
			`<tr data-pool="train"><td><a href="/cluster?pool=train">train</a> <div class="meta">owned</div></td><td>39 ready<div class="meta">1 other</div></td><td>320<div class="meta">320 × H100-80GB</div></td>`,
			`<tr data-pool="infer"><td><a href="/cluster?pool=infer">infer</a> <div class="meta">spot</div></td><td>20 ready<div class="meta">0 other</div></td><td>80<div class="meta">80 × L4-24GB</div></td>`,
			`<tr data-pool="-"><td><a href="/cluster?pool=-">no pool</a> </td><td>2 ready<div class="meta">0 other</div></td><td>0<div class="meta">–</div></td>`,
			`<tr data-pool="burst"><td><a href="/cluster?pool=burst">burst</a> <div class="meta">on-demand</div></td><td>none now: up to 4 on demand, each 8 × H100-80GB</td><td>0<div class="meta">–</div></td>`,
			`<tr data-pool="spare"><td><a href="/cluster?pool=spare">spare</a> <div class="meta">owned</div></td><td>none yet: an agent joins it with a join token</td>`,
			`<option value="train">train</option>`, `<option value="-">in no pool</option>`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("cluster page lacks %q", want)
			}
		}
		// Nodes by pool (none first, then by pool id), by name: the 2 in no pool, then train's.
		first := rowsOf(body)
		if len(first) != 50 || first[0] != "node-060" || first[1] != "node-061" || first[2] != "node-000" || first[49] != "node-047" {
			t.Errorf("the first page lists %v", first)
		}
		if strings.Contains(body, `data-testid="util"`) {
			t.Error("the first page shows a reading of a GPU it does not draw")
		}
		second := get("/cluster?page=2", nil)
		if rows := rowsOf(second); len(rows) != 12 || rows[0] != "node-048" || rows[11] != "node-059" {
			t.Errorf("the second page lists %v", rows)
		}
		if !strings.Contains(second, `data-testid="util">71% busy</span>`) || !strings.Contains(second, `aria-label="Pool infer"`) {
			t.Error("the second page lacks node-059's reading or the infer pool's heading")
		}
		// The refresh asks for the page it refreshes, and answers with it alone.
		live := get("/cluster?page=2", map[string]string{"HX-Request": "true"})
		if !strings.HasPrefix(live, `<div id="cluster-live" hx-get="/cluster?page=2"`) || len(rowsOf(live)) != 12 {
			t.Errorf("the second page's refresh: %.300s", live)
		}
		// A page past the end is the last one.
		if rows := rowsOf(get("/cluster?page=9", nil)); len(rows) != 12 {
			t.Errorf("a page past the end lists %d nodes, want the last page's 12", len(rows))
		}

		for path, want := range map[string][]string{
			"/cluster?pool=infer":                {"node-040", "node-059"},
			"/cluster?pool=-":                    {"node-060", "node-061"},
			"/cluster?state=cordoned":            {"node-007", "node-007"},
			"/cluster?name=NODE-01&pool=train":   {"node-010", "node-019"},
			"/cluster?name=05&pool=infer&page=1": {"node-050", "node-059"},
			"/cluster?pool=train&state=draining": nil,
		} {
			body := get(path, nil)
			rows := rowsOf(body)
			switch {
			case want == nil && (len(rows) != 0 || !strings.Contains(body, `data-testid="nodes-none"`)):
				t.Errorf("%s lists %v, want none and a word saying so", path, rows)
			case want != nil && (len(rows) == 0 || rows[0] != want[0] || rows[len(rows)-1] != want[1]):
				t.Errorf("%s lists %v, want %s to %s", path, rows, want[0], want[1])
			}
			if !strings.Contains(body, `data-testid="gpus">400<`) {
				t.Errorf("%s: the capacity is not the fleet's", path)
			}
		}
		if body := get("/cluster?pool=infer", nil); !strings.Contains(body, `<option value="infer" selected>infer</option>`) ||
			!strings.Contains(body, `href="/cluster">Clear</a>`) {
			t.Error("the filtered page does not show its filter, or a way to clear it")
		}

		for path, want := range map[string]string{
			"/cluster?pool=gone":  "Pool: there is no pool &#34;gone&#34;",
			"/cluster?state=lazy": "State: &#34;lazy&#34; is not one of",
			"/cluster?page=0":     "Page: &#34;0&#34; is not a page number",
		} {
			res, body := s.send(olga, "GET", path, "", nil)
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, want) {
				t.Errorf("GET %s: %d, want 400 saying %q: %s", path, res.StatusCode, want, body)
			}
		}
	})
}
