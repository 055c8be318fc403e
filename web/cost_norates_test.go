package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// With no cost rates set nothing is charged: a job's page and the cost page say so, and
// who sets them, instead of showing 0.00 as if it were a price. Once a rate is set the
// figures are shown again, 0.00 included.
func TestPagesSayNoCostRatesAreSet(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobSite(t, st)
		ctx := context.Background()
		ada := s.user("ada", "default", models.RoleMember)
		admin := s.signIn("admin", s.password)
		res, _ := s.send(ada, "POST", "/jobs", jobForm(s.csrf(ada, "/jobs/new")).Encode(), nil)
		m := locationJob.FindStringSubmatch(res.Header.Get("Location"))
		if m == nil {
			t.Fatalf("submit = %d", res.StatusCode)
		}
		page := "/jobs/" + m[1]
		const member = "No cost rates are set, so nothing is charged. An admin sets them."
		const lead = `No cost rates are set, so nothing is charged. <a href="/admin/cost/rates">Set them on the rates page</a>.`
		for _, tc := range []struct {
			who, path, want string
		}{
			{"ada", page, `<p data-testid="cost">` + member},
			{"admin", page, `<p data-testid="cost">` + lead},
			{"ada", "/cost", `data-testid="no-rates">` + member},
			{"admin", "/cost", `data-testid="no-rates">` + lead},
		} {
			_, body := s.send(map[string]*http.Client{"ada": ada, "admin": admin}[tc.who], "GET", tc.path, "", nil)
			if !strings.Contains(body, tc.want) {
				t.Errorf("%s's %s lacks %s", tc.who, tc.path, tc.want)
			}
		}
		acc := mustAccounting(t, st)
		if _, err := acc.CreateRate(ctx, models.CostRate{Resource: "egress", RateMicros: 1_000_000, EffectiveFrom: time.Now().UTC().AddDate(0, -1, 0)}); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{page, "/cost"} {
			if _, body := s.send(ada, "GET", path, "", nil); strings.Contains(body, "No cost rates are set") {
				t.Errorf("%s still says no rates are set once one is", path)
			}
		}
		if _, body := s.send(ada, "GET", page, "", nil); !strings.Contains(body, `<p class="figure" data-testid="cost">0.00 USD</p>`) {
			t.Errorf("the job's cost so far is not shown once a rate is set: %s", body)
		}
	})
}
