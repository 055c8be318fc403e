package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A project's placement policy set on the console holds its jobs to the allowed region
// and to confidential-computing nodes; the job page shows the policy, the job waits
// saying why, and starts once a node in the region is flagged confidential.
func TestPlacementPolicyThroughTheConsole(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		s := newDispatchSite(t, st)
		for _, p := range []*models.NodePool{
			{Name: "eu", Provider: "static", Region: "eu-west-1", CapacityType: models.CapacityOwned, Template: "{}", ProviderConfig: "{}"},
			{Name: "us", Provider: "static", Region: "us-east-1", CapacityType: models.CapacityOwned, Template: "{}", ProviderConfig: "{}"},
		} {
			if err := st.CreateNodePool(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		s.join("gpu-eu", "1xL4-24GB", func(inv *gpu.Inventory) { inv.ConfidentialCompute = gpu.CCUnknown })
		s.join("gpu-us", "1xL4-24GB")
		for node, pool := range map[string]string{"gpu-eu": "eu", "gpu-us": "us"} {
			if _, err := s.disp.SetNodePool(ctx, node, pool); err != nil {
				t.Fatal(err)
			}
		}
		admin := s.signIn("admin", s.password)
		token := s.csrf(admin, "/admin/projects/default")
		res, body := s.form(admin, token, "/admin/projects/default/placement", "regions", "EU West")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Regions: &#34;EU West&#34; is not a region") || !strings.Contains(body, `value="EU West"`) {
			t.Fatalf("a bad region = %d", res.StatusCode)
		}
		res, body = s.form(admin, token, "/admin/projects/default/placement", "pools", "ghosts")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Pools: there is no pool &#34;ghosts&#34;") {
			t.Fatalf("a missing pool = %d", res.StatusCode)
		}
		res, _ = s.form(admin, token, "/admin/projects/default/placement", "regions", "eu-west-1", "confidential_only", "true")
		wantStatus(t, "set the policy", res, http.StatusSeeOther)
		body = s.mustGet(admin, "/admin/projects/default")
		if !strings.Contains(body, "Project default runs only on regions eu-west-1; confidential-computing nodes only.") || !strings.Contains(body, "project.placement_changed") {
			t.Fatal("the project page shows neither the policy nor its change")
		}

		u, _ := st.UserByUsername(ctx, "admin")
		secret, _, err := s.id.CreateToken(ctx, u, "ci", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		bearer := map[string]string{"Authorization": "Bearer " + secret}
		id := s.submit(bearer, "resident")
		s.disp.Tick(ctx)
		var job struct {
			State         string
			PendingReason string `json:"pending_reason"`
		}
		_, body = s.send(s.browser(), "GET", "/api/v1/jobs/"+strconv.FormatInt(id, 10), "", bearer)
		if json.Unmarshal([]byte(body), &job); job.State != "queued" ||
			!strings.Contains(job.PendingReason, "2 nodes outside the project's placement policy (regions eu-west-1; confidential computing only)") {
			t.Fatalf("a job under the policy: %s", body)
		}
		page := s.mustGet(admin, "/jobs/"+strconv.FormatInt(id, 10))
		if !strings.Contains(page, `<dd data-testid="placement">project default runs only on regions eu-west-1; confidential-computing nodes only</dd>`) {
			t.Error("the job page does not show the placement policy")
		}

		// NVML reports the US node's mode, so it cannot be flagged; the EU node's it cannot.
		res, body = s.form(admin, token, "/admin/nodes/gpu-us/confidential", "confidential", "true")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "NVML reports confidential computing off on gpu-us") {
			t.Fatalf("flagging a node NVML knows = %d", res.StatusCode)
		}
		if body = s.mustGet(admin, "/admin/nodes/gpu-eu"); !strings.Contains(body, "NVML cannot tell") {
			t.Fatal("the EU node's page does not say NVML cannot tell")
		}
		res, _ = s.form(admin, token, "/admin/nodes/gpu-eu/confidential", "confidential", "true")
		wantStatus(t, "flag the EU node", res, http.StatusSeeOther)
		s.disp.Tick(ctx)
		_, body = s.send(s.browser(), "GET", "/api/v1/jobs/"+strconv.FormatInt(id, 10), "", bearer)
		if json.Unmarshal([]byte(body), &job); job.State != "scheduled" {
			t.Fatalf("the job once the EU node is confidential: %s", body)
		}
		allocs, _ := st.AllocationsOfJob(ctx, id)
		eu, _ := st.NodeByName(ctx, "gpu-eu")
		if len(allocs) != 1 || allocs[0].NodeID != eu.ID {
			t.Fatalf("allocations = %+v, want one on gpu-eu", allocs)
		}
	})
}
