package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// Priority classes from the console: created, changed and removed, bad input named.
func TestPriorityClassesThroughTheConsole(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		s := newSite(t, st, false)
		admin := s.signIn("admin", s.password)
		token := s.csrf(admin, "/admin/priority-classes")
		res, body := s.form(admin, token, "/admin/priority-classes", "mode", "create", "name", "research", "weight", "10")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Name: a priority class called &#34;research&#34; already exists") {
			t.Fatalf("a duplicate class = %d", res.StatusCode)
		}
		res, body = s.form(admin, token, "/admin/priority-classes", "mode", "create", "name", "urgent", "weight", "lots", "max_run_time", "4h")
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Weight: &#34;lots&#34; is not a whole number") || !strings.Contains(body, `value="urgent"`) {
			t.Fatalf("a bad weight = %d", res.StatusCode)
		}
		res, _ = s.form(admin, token, "/admin/priority-classes", "mode", "create", "name", "urgent", "weight", "2000", "can_preempt", "true",
			"checkpoint_grace", "1m", "max_run_time", "4h")
		wantStatus(t, "create", res, http.StatusSeeOther)
		body = s.mustGet(admin, "/admin/priority-classes?edit=urgent")
		if !strings.Contains(body, `<tr data-class="urgent"><td><strong>urgent</strong></td><td>2000</td><td>yes</td><td>no</td><td>1m0s</td><td>4h0m0s</td>`) ||
			!strings.Contains(body, "Change class urgent") || !strings.Contains(body, `value="2000"`) {
			t.Fatal("the class or its edit form is not on the page")
		}
		res, _ = s.form(admin, token, "/admin/priority-classes", "mode", "update", "name", "urgent", "weight", "1500", "checkpoint_grace", "1m", "max_run_time", "0")
		wantStatus(t, "update", res, http.StatusSeeOther)
		if c, _ := st.PriorityClassByName(t.Context(), "urgent"); c.Weight != 1500 || c.CanPreempt || c.MaxRunTimeSec != 0 {
			t.Fatalf("updated class = %+v", c)
		}
		res, _ = s.form(admin, token, "/admin/priority-classes", "mode", "update", "name", "ghost", "weight", "1")
		wantStatus(t, "update a missing class", res, http.StatusNotFound)
		if res, body = s.form(admin, token, "/admin/priority-classes/urgent/delete"); res.StatusCode != 200 || !strings.Contains(body, "Remove priority class urgent?") {
			t.Fatalf("delete without confirmation = %d", res.StatusCode)
		}
		res, _ = s.form(admin, token, "/admin/priority-classes/urgent/delete", "confirm", "yes")
		wantStatus(t, "delete", res, http.StatusSeeOther)
		body = s.mustGet(admin, "/admin/priority-classes")
		for _, a := range []string{"priority_class.created", "priority_class.changed", "priority_class.deleted"} {
			if !strings.Contains(body, a) {
				t.Errorf("the page lacks %s", a)
			}
		}
	})
}
