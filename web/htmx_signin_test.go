package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// An htmx request whose session ended (a live part refreshing itself) is not redirected
// to the login page, which htmx would follow unseen and swap into the page: it is told
// to open the login page itself (HX-Redirect), with the page it is on as next (only its
// path and query). A page opened in full is still redirected.
func TestSignInFirstTellsHtmxWhereToGo(t *testing.T) {
	t.Parallel()
	s := newSite(t, storetest.Open(t, store.Config{DataDir: t.TempDir()}), false)
	c := s.signIn("admin", s.password)
	s.clock.advance(13 * time.Hour)
	for _, tc := range []struct{ current, want string }{
		{s.srv.URL + "/jobs?state=queued", "/login?next=%2Fjobs%3Fstate%3Dqueued"},
		{"https://elsewhere.example/cluster", "/login?next=%2Fcluster"},
		{"", "/login?next=%2Fjobs%3Fstate%3Drunning"}, // no page named: the request's own URL
	} {
		h := map[string]string{"HX-Request": "true"}
		if tc.current != "" {
			h["HX-Current-URL"] = tc.current
		}
		res, body := s.send(c, "GET", "/jobs?state=running", "", h)
		if res.StatusCode != http.StatusUnauthorized || res.Header.Get("HX-Redirect") != tc.want || res.Header.Get("Location") != "" || body != "" {
			t.Errorf("htmx GET from %q after the session ended = %d, HX-Redirect %q, Location %q, body %.80q; want 401 and HX-Redirect %s",
				tc.current, res.StatusCode, res.Header.Get("HX-Redirect"), res.Header.Get("Location"), body, tc.want)
		}
	}
	res, _ := s.send(c, "GET", "/jobs?state=running", "", nil)
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/login?next=%2Fjobs") || res.Header.Get("HX-Redirect") != "" {
		t.Fatalf("the page itself = %d → %q", res.StatusCode, res.Header.Get("Location"))
	}
}
