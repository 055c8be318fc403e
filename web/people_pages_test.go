package web_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

var personRow = regexp.MustCompile(`<tr data-user="([^"]+)">`)

// The console's people page lists a hundred people a page (it listed the first 200
// and no more, without a word), narrowed by a search that its links keep; an action
// taken on a page goes back to it; a bad page is a 400 naming it.
func TestPeoplePageHasPages(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		for i := range 250 {
			if err := st.CreateUser(t.Context(), &models.User{Username: fmt.Sprintf("user-%03d", i), Email: fmt.Sprintf("u%d@lab-%d.example", i, i%2)}); err != nil {
				t.Fatal(err)
			}
		}
		admin := s.signIn("admin", s.password)
		for _, tc := range []struct {
			path, count, first, last, prev, next string
		}{
			{"/admin/people", "People 1–100 of 251", "admin", "user-098", "", "/admin/people?page=2"},
			{"/admin/people?page=3", "People 201–251 of 251", "user-199", "user-249", "/admin/people?page=2", ""},
			{"/admin/people?page=7", "People 201–251 of 251", "user-199", "user-249", "/admin/people?page=2", ""},
			{"/admin/people?q=LAB-1&page=2", "People 101–125 of 125", "user-201", "user-249", "/admin/people?q=LAB-1", ""},
		} {
			body := s.mustGet(admin, tc.path)
			rows := personRow.FindAllStringSubmatch(body, -1)
			count := regexp.MustCompile(`data-testid="people-count">([^<]+)<`).FindStringSubmatch(body)
			if len(rows) == 0 || count == nil || count[1] != tc.count || rows[0][1] != tc.first || rows[len(rows)-1][1] != tc.last {
				t.Errorf("%s: %d rows from %v, count %v; want %s, %s to %s", tc.path, len(rows), rows[:min(len(rows), 1)], count, tc.count, tc.first, tc.last)
			}
			for rel, want := range map[string]string{"prev": tc.prev, "next": tc.next} {
				m := regexp.MustCompile(`href="([^"]*)" rel="` + rel + `"`).FindStringSubmatch(body)
				switch {
				case m == nil && want != "":
					t.Errorf("%s: no %s link, want one to %s", tc.path, rel, want)
				case m != nil && html.UnescapeString(m[1]) != want:
					t.Errorf("%s: the %s link goes to %s, want %q", tc.path, rel, html.UnescapeString(m[1]), want)
				}
			}
		}
		if body := s.mustGet(admin, "/admin/people?q=lab-1&page=2"); !strings.Contains(body, `<input type="hidden" name="back" value="/admin/people?page=2&amp;q=lab-1">`) {
			t.Errorf("the rows' actions do not say where to come back to")
		}
		token := s.csrf(admin, "/admin/people")
		for user, back := range map[string]string{"user-201": "/admin/people?page=2&q=lab-1", "user-203": "https://evil.example/admin/people"} {
			res, _ := s.form(admin, token, "/admin/people/"+user+"/roles", "auditor", "true", "back", back)
			want := back
			if strings.Contains(back, "evil") {
				want = "/admin/people"
			}
			if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, want+"?notice=") && !strings.HasPrefix(loc, want+"&notice=") {
				t.Errorf("roles of %s from %s went to %q; want %s", user, back, loc, want)
			}
		}
		res, body := s.send(admin, "GET", "/admin/people?page=0", "", nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, `Page: &#34;0&#34; is not a page number`) {
			t.Errorf("page 0 = %d", res.StatusCode)
		}
	})
}
