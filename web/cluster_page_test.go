package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// The cluster page shows anyone signed in every node and GPU with what holds it and its
// latest reading, simulated GPUs labelled, the queue by class and team, and quota use.
func TestClusterPage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		olga, _ := s.member("olga")
		if _, body := s.send(olga, "GET", "/cluster", "", nil); !strings.Contains(body, "No node has joined yet") || !strings.Contains(body, "Nothing waits") {
			t.Fatalf("cluster page of an empty cluster: %s", body)
		}
		node := s.join("gpu-a", "2xA100-80GB")
		s.join("gpu-m", "1xA100-40GB:mig=3g.20gb+3g.20gb")
		ada := s.user("ada", "default", models.RoleMember)
		token := s.csrf(ada, "/jobs/new")
		f := jobForm(token)
		f.Set("gpu_share", "")
		f.Set("gpu_model", "A100-80GB")
		s.send(ada, "POST", "/jobs", f.Encode(), nil)
		f.Set("gpus", "2") // fits gpu-a once the first job ends, not before
		f.Set("name", "pair")
		s.send(ada, "POST", "/jobs", f.Encode(), nil)
		s.disp.Tick(ctx)
		leases, err := s.disp.Leases(ctx, node, "", 0)
		if err != nil || len(leases.Allocations) != 1 {
			t.Fatalf("leases = %+v %v", leases, err)
		}
		held := leases.Allocations[0].Devices[0].UUID
		tel, err := telemetry.New(st, telemetry.Config{})
		if err != nil {
			t.Fatal(err)
		}
		util, mem, temp := 37, int64(12288), 61
		now := time.Now().UTC()
		if _, err := tel.Ingest(ctx, now, telemetry.NodeSample{NodeID: node.ID, Jobs: map[string]int64{held: leases.Allocations[0].JobID},
			Sample: gpu.Sample{Time: now, Devices: []gpu.DeviceSample{{UUID: held, UtilizationPct: &util, MemoryUsedMiB: &mem, TemperatureC: &temp}}}}); err != nil {
			t.Fatal(err)
		}
		team, err := st.TeamByName(ctx, "default")
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SaveQuota(ctx, &models.Quota{TeamID: team.ID, GPUModel: "A100-80GB", QuotaLimits: models.QuotaLimits{NominalMilli: 4000}}); err != nil {
			t.Fatal(err)
		}
		_, body := s.send(olga, "GET", "/cluster", "", nil)
		for _, want := range []string{
			`data-testid="gpus">3<`, `data-testid="gpus-used">1<`, `data-testid="gpus-free">2<`, ">SIMULATED</span>",
			"gpu-a", "gpu-m", "✓ ready", "GPU 0</span> A100-80GB · 80 GiB", "✓ healthy",
			`data-testid="util">37% busy, 12 GiB used, 61 °C</span>`, "no reading yet",
			"3g.20gb", "(free)", "MIG slices free",
			"<td>research</td><td>default</td><td class=\"num\">1</td>",
			"A100-80GB</td><td>1 of 4", `hx-trigger="every 5s"`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("cluster page lacks %q", want)
			}
		}
		// gpu-a's two A100s (SXM) are joined by NVLink; gpu-m's one card is not a pair.
		row := body[strings.Index(body, `data-node="gpu-a"`):]
		if row = row[:strings.Index(row, "</tr>")]; strings.Count(body, "all GPUs joined by NVLink") != 1 || !strings.Contains(row, "all GPUs joined by NVLink") {
			t.Errorf("the cluster page does not say gpu-a alone has its GPUs joined by NVLink")
		}
		// The GPU held names its job.
		jobID := strconv.FormatInt(leases.Allocations[0].JobID, 10)
		if !strings.Contains(body, `href="/jobs/`+jobID+`">#`+jobID+`</a>`) {
			t.Errorf("cluster page does not link job %s from the GPU it holds", jobID)
		}
		if t.Failed() {
			t.Logf("page: %s", body[strings.Index(body, "<main"):])
		}
		// The console counts what each node runs.
		if _, nodes := s.send(s.signIn("admin", s.password), "GET", "/admin/nodes", "", nil); strings.Count(nodes, ">1 running</div>") != 1 {
			t.Errorf("the nodes console does not say that gpu-a runs 1 job")
		}
		// htmx's refresh gets the live part alone: capacity and readings, not the queue
		// or the quotas, nor the layout around them.
		res, live := s.send(olga, "GET", "/cluster", "", map[string]string{"HX-Request": "true"})
		if res.StatusCode != 200 || !strings.HasPrefix(live, `<div id="cluster-live"`) || !strings.Contains(live, `data-testid="gpus-used">1<`) ||
			!strings.Contains(live, `data-testid="util">37% busy`) || strings.Contains(live, "<td>research</td>") || strings.Contains(live, `<nav aria-label="Main"`) {
			t.Errorf("the live part: %d %s", res.StatusCode, live)
		}
		if res.Header.Get("Vary") != "HX-Request" {
			t.Error("the page and its live part share a URL without Vary: HX-Request")
		}
	})
}

// Sizes read as a person writes them: an L4's 23,034 MiB is "22.5 GiB" on the cluster
// page and the admin's node pages, not the 22.494140625 GiB that the division gives.
func TestClusterPageRoundsSizes(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobSite(t, st)
	s.join("gpu-l4", "1xL4-24GB")
	admin := s.signIn("admin", s.password)
	for _, path := range []string{"/cluster", "/admin/nodes", "/admin/nodes/gpu-l4"} {
		_, body := s.send(admin, "GET", path, "", nil)
		if !strings.Contains(body, "22.5 GiB") || strings.Contains(body, "22.49") {
			t.Errorf("%s does not say the L4's memory as 22.5 GiB: %s", path, body[strings.Index(body, "<main"):])
		}
	}
}
