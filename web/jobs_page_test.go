package web_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

var (
	jobRow   = regexp.MustCompile(`<tr data-job="(\d+)">`)
	nextLink = regexp.MustCompile(`href="(/jobs\?[^"]*)" rel="next"`)
)

// rows returns the job ids of a jobs page, in order.
func rows(body string) []int64 {
	var ids []int64
	for _, m := range jobRow.FindAllStringSubmatch(body, -1) {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		ids = append(ids, id)
	}
	return ids
}

// signInAs gives a user created by the test a password and signs them in.
func (s *jobsSite) signInAs(name string) *http.Client {
	s.t.Helper()
	if name == "admin" {
		return s.signIn("admin", s.password)
	}
	pw, err := s.id.ResetPassword(context.Background(), name)
	if err != nil {
		s.t.Fatal(err)
	}
	return s.signIn(name, pw)
}

// walk follows the page's "Next page" links from path to the last page.
func (s *jobsSite) walk(c *http.Client, path string) []int64 {
	s.t.Helper()
	var ids []int64
	for pages := 0; path != ""; pages++ {
		res, body := s.send(c, "GET", path, "", nil)
		if res.StatusCode != http.StatusOK || pages > 20 {
			s.t.Fatalf("GET %s = %d (page %d)", path, res.StatusCode, pages)
		}
		ids = append(ids, rows(body)...)
		path = ""
		if m := nextLink.FindStringSubmatch(body); m != nil {
			path = html.UnescapeString(m[1])
		}
	}
	return ids
}

func TestJobsPageListsFiltersAndPages(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newJobsSite(t, st)
		vision, speech := s.ids["vision-main"], s.ids["speech-main"]
		admin, ada, eve := s.signInAs("admin"), s.signInAs("ada"), s.signInAs("eve")

		res, body := s.send(admin, "GET", "/jobs", "", nil)
		if res.StatusCode != http.StatusOK || len(rows(body)) != 11 || !strings.Contains(body, `href="/jobs/`+strconv.FormatInt(vision[0], 10)+`"`) {
			t.Fatalf("admin's jobs page = %d with %d rows", res.StatusCode, len(rows(body)))
		}
		for _, want := range []string{"⊘ cancelled", "◷ queued", `<option value="speech-main"`, `<option value="vision-main"`, `aria-current="page">Jobs`} {
			if !strings.Contains(body, want) {
				t.Errorf("admin's jobs page lacks %q", want)
			}
		}

		// A bad filter reads no jobs, and the form shown again still offers every project.
		res, body = s.send(admin, "GET", "/jobs?state=sleeping", "", nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, `<option value="speech-main"`) || !strings.Contains(body, `<option value="vision-main"`) {
			t.Errorf("admin's bad filter = %d; want 400 with every project in the filter", res.StatusCode)
		}
		_, body = s.send(admin, "GET", "/jobs", "", map[string]string{"HX-Request": "true"})
		if !strings.HasPrefix(body, `<section id="job-results"`) || len(rows(body)) != 11 || strings.Contains(body, "<option") {
			t.Errorf("admin's htmx filter %.80q; want only the results, 11 rows", body)
		}

		if got, want := s.walk(admin, "/jobs?limit=4"), reversed(append(slices.Clone(vision), speech...)); !slices.Equal(got, want) {
			t.Errorf("pages of four: %v, want %v", got, want)
		}
		if got, want := s.walk(admin, "/jobs?limit=2&sort=name&project=speech-main"), speech; !slices.Equal(got, want) {
			t.Errorf("pages by name in speech-main: %v, want %v", got, want)
		}
		_, body = s.send(ada, "GET", "/jobs", "", nil)
		if got := rows(body); !slices.Equal(got, reversed(vision)) || strings.Contains(body, `<option value="speech-main"`) {
			t.Errorf("ada sees %v and speech's filter: %v", got, strings.Contains(body, "speech-main"))
		}
		if !strings.Contains(body, `<option value="vision-main"`) {
			t.Error("ada's project filter does not offer her project, vision-main")
		}
		_, body = s.send(ada, "GET", "/jobs?state=cancelled", "", nil)
		if got := rows(body); !slices.Equal(got, []int64{vision[6], vision[3], vision[0]}) {
			t.Errorf("ada's cancelled jobs: %v", got)
		}
		_, body = s.send(ada, "GET", "/jobs?sort=name", "", nil)
		if !strings.Contains(body, `aria-sort="ascending"><a href="/jobs?sort=-name">Job ↑`) {
			t.Error("the Job column does not say it sorts A to Z, nor offer Z to A")
		}

		res, body = s.send(ada, "GET", "/jobs?state=sleeping", "", nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "State: ") || !strings.Contains(body, `name="state" aria-invalid="true"`) || len(rows(body)) != 0 {
			t.Errorf("bad state = %d; want 400 with the field marked", res.StatusCode)
		}
		res, body = s.send(ada, "GET", "/jobs?project=speech-main", "", nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Project: there is no project") || len(rows(body)) != 0 {
			t.Errorf("a foreign project = %d; want 400 and none of its jobs", res.StatusCode)
		}
		res, body = s.send(ada, "GET", "/jobs?cursor=nope", "", nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Cursor: ") {
			t.Errorf("bad cursor = %d", res.StatusCode)
		}

		res, body = s.send(ada, "GET", "/jobs?state=queued", "", map[string]string{"HX-Request": "true"})
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(body, `<section id="job-results"`) || len(rows(body)) != 4 || res.Header.Get("Vary") != "HX-Request" {
			t.Errorf("htmx filter = %d %.80q; want only the results, 4 rows", res.StatusCode, body)
		}
		// The filters' summary comes with the results, worded by the server alone.
		if !strings.Contains(body, `<span id="filters-set" class="meta" hx-swap-oob="true">(1 set: state)</span>`) {
			t.Errorf("htmx filter's results lack the filters' summary: %q", body[max(0, len(body)-200):])
		}
		if _, body := s.send(ada, "GET", "/jobs?state=queued&user=ada", "", nil); !strings.Contains(body, `<span id="filters-set" class="meta">(2 set: state, user)</span>`) {
			t.Error("the page's filters' summary does not name the two filters set")
		}
		res, body = s.send(ada, "GET", "/jobs?state=queued", "", map[string]string{"HX-Request": "true", "HX-History-Restore-Request": "true"})
		if !strings.Contains(body, "<html") {
			t.Errorf("history restore = %d without the whole page", res.StatusCode)
		}
		if _, body = s.send(ada, "GET", "/jobs?user=bob", "", nil); !strings.Contains(body, "No job matches these filters") {
			t.Error("an empty filtered list does not offer to clear the filters")
		}
		if _, body = s.send(eve, "GET", "/jobs", "", nil); !strings.Contains(body, "not in any project") {
			t.Error("a user in no project is not told why the list is empty")
		}
	})
}

func TestJobsPageEmptySaysHowToSubmit(t *testing.T) {
	t.Parallel()
	s := newSite(t, storetest.Open(t, store.Config{DataDir: t.TempDir()}), false)
	res, body := s.send(s.signIn("admin", s.password), "GET", "/jobs", "", nil)
	for _, want := range []string{"No jobs yet", `href="/jobs/new"`, "gantry job submit -f job.yaml", "POST /api/v1/jobs"} {
		if res.StatusCode != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("empty jobs page = %d, lacks %q", res.StatusCode, want)
		}
	}
}

// In a real browser a filter change replaces the results in place (htmx) and puts the
// filter in the address bar; a bad filter is shown, not swallowed.
func TestJobsPageInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobsSite(t, st)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s.site)
	err := chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/jobs"),
		chromedp.WaitVisible("[data-testid=jobs]"),
	)
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		return run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-testid=jobs] tbody tr").length`))
	}
	if n := count(); n != 11 {
		t.Fatalf("%d rows before filtering, want 11", n)
	}
	browsertest.Screenshot(t, ctx, "jobs")
	err = chromedp.Do(ctx,
		chromedp.SetValue(`select[name=state]`, "cancelled"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("select[name=state]").dispatchEvent(new Event("change", {bubbles: true}))`),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("[data-testid=jobs] tbody tr").length === 3`),
	)
	if err != nil {
		t.Fatalf("filter by state: %v (%d rows)", err, count())
	}
	loc := run(t, ctx, chromedp.Location())
	if u, _ := url.Parse(loc); u.Query().Get("state") != "cancelled" {
		t.Errorf("the address bar does not keep the filter: %s", loc)
	}
	err = chromedp.Do(ctx,
		chromedp.SendKeys(`input[name=user]`, "mallory"),
		chromedp.Submit(`input[name=user]`),
		chromedp.WaitVisible(`#job-results [role=alert]`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if msg := run(t, ctx, chromedp.Text(`#job-results [role=alert]`)); !strings.Contains(msg, `User: there is no user "mallory"`) {
		t.Errorf("bad user filter shows %q", msg)
	}
}
