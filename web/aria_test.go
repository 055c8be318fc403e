package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// bareARIA is an ARIA attribute without a value inside a tag, as templ's
// aria-invalid?= writes it: ARIA reads an empty state as "false", and the stylesheet's
// [aria-invalid="true"] never matches.
var bareARIA = regexp.MustCompile(`<[a-z][^<>]*\s(aria-[a-z]+)(?:\s|/?>)`)

// hintID is a field's hint, which its field names in aria-describedby so that a
// screen reader reads the hint with it.
var hintID = regexp.MustCompile(`\sid="([^"]+-hint)"`)

// describedBy is the list of ids an element is described by.
var describedBy = regexp.MustCompile(`\saria-describedby="([^"]*)"`)

// checkARIA fails the test for a page that writes a bare ARIA attribute, or a field
// hint that no field is described by. Every page that site.send fetches is checked.
func checkARIA(t *testing.T, res *http.Response, body string) {
	t.Helper()
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		return
	}
	if m := bareARIA.FindStringSubmatch(body); m != nil {
		t.Errorf("%s %s writes a bare %s attribute (say %s=\"true\"): %s", res.Request.Method, res.Request.URL.Path, m[1], m[1], m[0])
	}
	described := map[string]bool{}
	for _, m := range describedBy.FindAllStringSubmatch(body, -1) {
		for _, id := range strings.Fields(m[1]) {
			described[id] = true
		}
	}
	for _, m := range hintID.FindAllStringSubmatch(body, -1) {
		if !described[m[1]] {
			t.Errorf("%s %s has the hint %q, but no field is described by it", res.Request.Method, res.Request.URL.Path, m[1])
		}
	}
}

// The checker finds what it is for, and lets attributes with values through.
func TestBareARIAIsFound(t *testing.T) {
	t.Parallel()
	for html, bare := range map[string]bool{
		`<input name="a" aria-invalid>`:                     true,
		`<input aria-invalid name="a">`:                     true,
		`<input name="a" aria-invalid/>`:                    true,
		`<select name="a" aria-invalid hx-get="/x">`:        true,
		`<input name="a" aria-invalid="true">`:              false,
		`<input aria-describedby="h" name="a">`:             false,
		`<p>aria-invalid is set on the field</p>`:           false,
		`<th scope="col" aria-sort="descending">Name</th>`:  false,
		`<input aria-invalid="true" aria-describedby="x"/>`: false,
	} {
		if got := bareARIA.MatchString(html); got != bare {
			t.Errorf("bare ARIA in %s: %v, want %v", html, got, bare)
		}
	}
}

// The fields that older pages marked with a bare aria-invalid say "true" when they are
// what a message is about, so that a screen reader announces them and the stylesheet
// outlines them; site.send checks no page writes the bare attribute.
func TestInvalidFieldsSayTrue(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		admin := s.signIn("admin", s.password)
		for _, c := range []struct{ path, id string }{
			{"/admin/audit?since=yesterday", `name="since"`},
			{"/cost?from=31-12-2025", `id="from"`},
		} {
			res, body := s.send(admin, "GET", c.path, "", nil)
			if res.StatusCode != http.StatusBadRequest || !regexp.MustCompile(c.id+`[^>]*aria-invalid="true"`).MatchString(body) {
				t.Errorf("GET %s = %d, %s not marked invalid:\n%s", c.path, res.StatusCode, c.id, body)
			}
		}
		token := s.csrf(admin, "/tokens")
		res, body := s.send(admin, "POST", "/tokens", url.Values{"csrf_token": {token}, "name": {"ci"}, "scope": {"read"}, "days": {"0"}}.Encode(), nil)
		if res.StatusCode != http.StatusBadRequest || !regexp.MustCompile(`id="days"[^>]*aria-invalid="true"`).MatchString(body) || strings.Count(body, "aria-invalid") != 1 {
			t.Errorf("POST /tokens with 0 days = %d, the days field alone not marked invalid:\n%s", res.StatusCode, body)
		}
	})
}
