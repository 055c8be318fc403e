package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A node agent's words on how a job ended that quote its secret variable (a container
// runtime's error) show it masked on the job page, in the API, on the audit page and
// in its export.
func TestSecretInAnAgentMessageIsShownMasked(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		ada := s.user("ada", "default", models.RoleMember)
		const secret = "hf_shown-secret-93"
		f := jobForm(s.csrf(ada, "/jobs/new"))
		f.Set("gpu_share", "")
		f.Set("gpu_model", "A100-80GB")
		f.Set("retries", "0")
		f.Set("secret_env", "HF_TOKEN="+secret)
		res, _ := s.send(ada, "POST", "/jobs", f.Encode(), nil)
		m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if res.StatusCode != http.StatusSeeOther || m == nil {
			t.Fatalf("submit = %d → %q", res.StatusCode, res.Header.Get("Location"))
		}
		node := s.join("gpu-a", "1xA100-80GB")
		s.disp.Tick(ctx)
		leases, err := s.disp.Leases(ctx, node, "", 0)
		if err != nil || len(leases.Allocations) != 1 {
			t.Fatalf("leases = %+v, %v", leases, err)
		}
		ref := leases.Allocations[0].AttemptRef
		if err := s.disp.Report(ctx, node, agentapi.Report{AttemptRef: ref, Event: agentapi.EventStarted}); err != nil {
			t.Fatal(err)
		}
		exit := 125
		says := "the container runtime could not run the job: invalid env HF_TOKEN=" + secret
		if err := s.disp.Report(ctx, node, agentapi.Report{AttemptRef: ref, Event: agentapi.EventExited, ExitCode: &exit, Message: says}); err != nil {
			t.Fatal(err)
		}
		token, _, err := s.id.CreateToken(ctx, userByName(t, st, "ada"), "cli", identity.ScopeRead, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		admin := s.signIn("admin", s.password)
		for _, p := range []struct {
			what, path string
			client     *http.Client
			header     map[string]string
		}{
			{"the job page", "/jobs/" + m[1], ada, nil},
			{"the API", "/api/v1/jobs/" + m[1], s.browser(), map[string]string{"Authorization": "Bearer " + token}},
			{"the audit page", "/admin/audit", admin, nil},
			{"the audit export", "/admin/audit/export", admin, nil},
		} {
			res, body := s.send(p.client, "GET", p.path, "", p.header)
			switch {
			case res.StatusCode != http.StatusOK:
				t.Errorf("%s = %d", p.what, res.StatusCode)
			case strings.Contains(body, "shown-secret"):
				t.Errorf("%s shows the secret value", p.what)
			case !strings.Contains(body, "invalid env HF_TOKEN="+models.MaskedSecret):
				t.Errorf("%s does not show the agent's words masked: %s", p.what, body)
			}
		}
	})
}
