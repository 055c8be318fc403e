package web_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

var (
	feedbackButton = regexp.MustCompile(`(?s)<details class="feedback-button".*?</details>`)
	buttonPage     = regexp.MustCompile(`name="page" value="([^"]*)"`)
	buttonJob      = regexp.MustCompile(`name="job_id" value="([^"]*)"`)
	pageLink       = regexp.MustCompile(`href="(/[^"]*)"`)
)

// feedbackJob creates a job of admin's in the default project, for its pages.
func feedbackJob(t *testing.T, st *store.Store) *models.Job {
	t.Helper()
	ctx := context.Background()
	def, err := st.ProjectByName(ctx, "default")
	must(t, err)
	admin, err := st.UserByUsername(ctx, "admin")
	must(t, err)
	j := &models.Job{Name: "train", ProjectID: def.ID, UserID: admin.ID, Command: `["true"]`, Env: "{}", Replicas: 1, Kind: "batch", PriorityClass: "research"}
	must(t, st.CreateJob(ctx, j, "test"))
	return j
}

// Every page an admin reaches by following the portal's links has the Feedback button,
// and it files about that very page: its path, never its query (which can hold filters,
// names or tokens), and on a job's pages the job.
// The board and its items have their own form instead.
func TestFeedbackButtonOnEveryPage(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	admin := s.signIn("admin", s.password)
	job := feedbackJob(t, st)
	jobPath := fmt.Sprintf("/jobs/%d", job.ID)

	skip := func(p string) bool {
		for _, prefix := range []string{"/static/", "/api/", "/healthz", "/metrics", "/logout", "/login"} {
			if strings.HasPrefix(p, prefix) {
				return true
			}
		}
		return strings.Contains(p, ".csv") || strings.Contains(p, "/stream")
	}
	seen := map[string]bool{}
	queue := []string{"/", jobPath, "/jobs?state=queued&project=default"}
	checked, jobPages := 0, 0
	for len(queue) > 0 && checked < 250 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] || skip(p) {
			continue
		}
		seen[p] = true
		res, body := s.send(admin, "GET", p, "", nil)
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			continue
		}
		for _, m := range pageLink.FindAllStringSubmatch(body, -1) {
			link, _, _ := strings.Cut(html.UnescapeString(m[1]), "#")
			if !seen[link] {
				queue = append(queue, link)
			}
		}
		checked++
		button := feedbackButton.FindString(body)
		if strings.HasPrefix(p, "/feedback") {
			if button != "" {
				t.Errorf("%s, which has the feedback form, also has the Feedback button", p)
			}
			continue
		}
		if button == "" {
			t.Errorf("%s has no Feedback button", p)
			continue
		}
		path, _, _ := strings.Cut(p, "?")
		if m := buttonPage.FindStringSubmatch(button); m == nil || html.UnescapeString(m[1]) != path {
			t.Errorf("the Feedback button of %s files about page %v, want %s", p, m, path)
		}
		m := buttonJob.FindStringSubmatch(button)
		switch {
		case strings.HasPrefix(p, jobPath+"/") || p == jobPath || strings.HasPrefix(p, jobPath+"?"):
			jobPages++
			if m == nil || m[1] != fmt.Sprint(job.ID) {
				t.Errorf("the Feedback button of %s is not about job %d: %v", p, job.ID, m)
			}
		case m != nil:
			t.Errorf("the Feedback button of %s is about job %s", p, m[1])
		}
	}
	// The crawl must have reached the portal's sections, not stopped at the first page.
	for _, p := range []string{"/jobs", "/images", "/cluster", "/cost", "/alerts", "/admin", "/admin/teams", "/admin/quotas", "/admin/nodes", "/tokens", "/projects"} {
		if !seen[p] {
			t.Errorf("the crawl never reached %s; it saw %d pages", p, len(seen))
		}
	}
	t.Logf("checked %d pages, %d of them job %d's", checked, jobPages, job.ID)
	if jobPages == 0 {
		t.Errorf("no page of job %d was checked", job.ID)
	}

	// A form shown again after a POST files about the page the form was on.
	token := s.csrf(admin, "/admin/teams")
	res, body := s.send(admin, "POST", "/admin/teams", url.Values{"csrf_token": {token}, "name": {"Bad Name!"}}.Encode(),
		map[string]string{"Referer": s.srv.URL + "/admin/teams?from=home"})
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("a bad team name = %d, want 400", res.StatusCode)
	}
	if m := buttonPage.FindStringSubmatch(feedbackButton.FindString(body)); m == nil || html.UnescapeString(m[1]) != "/admin/teams" {
		t.Errorf("after the refused POST the Feedback button files about %v, want /admin/teams", m)
	}
	res, body = s.send(admin, "POST", "/admin/teams", url.Values{"csrf_token": {token}, "name": {"Bad Name!"}}.Encode(),
		map[string]string{"Referer": "https://elsewhere.example/admin/teams"})
	if m := buttonPage.FindStringSubmatch(feedbackButton.FindString(body)); res.StatusCode != http.StatusBadRequest || m == nil || m[1] != "" {
		t.Errorf("with another site's Referer the Feedback button files about %v, want no page", m)
	}
}

// In a real browser, the Feedback button of a job's page opens the short form, and what
// it files records that page and that job.
func TestFeedbackButtonInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	job := feedbackJob(t, st)
	jobPath := fmt.Sprintf("/jobs/%d", job.ID)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s)
	err := chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+jobPath),
		chromedp.WaitVisible(`[data-testid=feedback-button] summary`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if n := run(t, ctx, chromedp.Evaluate[bool](`document.querySelector('#fbb-title').checkVisibility()`)); n {
		t.Fatal("the feedback form shows before the button is pressed")
	}
	err = chromedp.Do(ctx,
		chromedp.Click(`[data-testid=feedback-button] summary`),
		chromedp.WaitVisible("#fbb-title"),
		chromedp.SetValue("#fbb-category", "bug"),
		chromedp.SendKeys("#fbb-title", "Logs stop after an hour"),
		chromedp.SendKeys("#fbb-body", "The log view of this job froze at 60 minutes."),
	)
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Screenshot(t, ctx, "feedback-button")
	if err := chromedp.Do(ctx, browsertest.Loads(chromedp.Click("#fbb-send")), chromedp.WaitVisible("[data-testid=job]")); err != nil {
		t.Fatal(err)
	}
	from := run(t, ctx, chromedp.Text("[data-testid=page]"))
	about := run(t, ctx, chromedp.Text("[data-testid=job]"))
	if from != jobPath || about != fmt.Sprintf("job %d", job.ID) {
		t.Fatalf("the item says from %q, about %q; want %s and job %d", from, about, jobPath, job.ID)
	}
	items, err := st.FeedbackItems(context.Background(), store.FeedbackFilter{})
	if err != nil || len(items) != 1 {
		t.Fatalf("items = %+v, %v", items, err)
	}
	it := items[0]
	if it.Page != jobPath || it.JobID == nil || *it.JobID != job.ID || it.Category != "bug" || it.Title != "Logs stop after an hour" {
		t.Fatalf("stored %+v, want the page %s and job %d", it, jobPath, job.ID)
	}
}

var navFeedback = regexp.MustCompile(`<nav aria-label="Main">.*?<a href="(/feedback[^"]*)"`)

// The nav's Feedback link, like the button, names the page it is on, by its path alone
// (a query can hold filters or secrets); what is filed from the board it opens records
// that page and, from a job's page, the job.
func TestFeedbackNavLinkCarriesThePage(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	admin := s.signIn("admin", s.password)
	job := feedbackJob(t, st)
	jobPath := fmt.Sprintf("/jobs/%d", job.ID)

	navLink := func(page string) string {
		t.Helper()
		res, body := s.send(admin, "GET", page, "", nil)
		m := navFeedback.FindStringSubmatch(strings.ReplaceAll(body, "\n", " "))
		if res.StatusCode != http.StatusOK || m == nil {
			t.Fatalf("GET %s = %d with no Feedback link in the nav", page, res.StatusCode)
		}
		return html.UnescapeString(m[1])
	}
	for _, c := range []struct{ page, want string }{
		{jobPath + "?secret=hunter2", "/feedback?page=" + url.QueryEscape(jobPath)},
		{"/jobs?state=queued", "/feedback?page=%2Fjobs"},
		{"/", "/feedback?page=%2F"},
		{"/feedback", "/feedback"},
	} {
		if got := navLink(c.page); got != c.want {
			t.Errorf("on %s the nav's Feedback link is %s, want %s", c.page, got, c.want)
		}
	}

	link := navLink(jobPath + "?secret=hunter2")
	_, board := s.send(admin, "GET", link, "", nil)
	if m := buttonPage.FindStringSubmatch(board); m == nil || html.UnescapeString(m[1]) != jobPath {
		t.Fatalf("the board opened from the nav on %s files about page %v", jobPath, m)
	}
	if m := buttonJob.FindStringSubmatch(board); m == nil || m[1] != fmt.Sprint(job.ID) {
		t.Fatalf("the board opened from the nav on %s is not about job %d: %v", jobPath, job.ID, m)
	}
	form := url.Values{"csrf_token": {s.csrf(admin, link)}, "category": {"bug"}, "title": {"Logs stop after an hour"},
		"page": {html.UnescapeString(buttonPage.FindStringSubmatch(board)[1])}, "job_id": {fmt.Sprint(job.ID)}}
	if res, _ := s.send(admin, "POST", "/feedback", form.Encode(), nil); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("filing from the board = %d, want 303", res.StatusCode)
	}
	items, err := st.FeedbackItems(context.Background(), store.FeedbackFilter{})
	if err != nil || len(items) != 1 {
		t.Fatalf("items = %+v, %v", items, err)
	}
	if it := items[0]; it.Page != jobPath || it.JobID == nil || *it.JobID != job.ID {
		t.Fatalf("stored page %q job %v, want %s and job %d", it.Page, it.JobID, jobPath, job.ID)
	}
}

// Feedback keeps the page it is about by its path alone, whatever the form sends: a
// query (filters, names, a token pasted into a link) or fragment is dropped where the
// board's form is drawn and where the item is stored, also one too long to keep; the
// item's page and the board's export show the path, saying so.
func TestFeedbackKeepsOnlyThePagePath(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	ada, _ := s.member("ada")
	admin := s.signIn("admin", s.password)
	const token = "gat_pasted-token-57"

	_, board := s.send(ada, "GET", "/feedback?page="+url.QueryEscape("/jobs/5?user=ada&token="+token), "", nil)
	if m := buttonPage.FindStringSubmatch(board); m == nil || m[1] != "/jobs/5" || strings.Contains(board, token) {
		t.Errorf("the board opened about a page with a query files about %v, want /jobs/5", m)
	}
	for _, c := range []struct{ sent, want string }{
		{"/jobs?user=ada&token=" + token + "#row-3", "/jobs"},
		{"/cost#" + token, "/cost"},
		{"/images?q=" + strings.Repeat("x", 600), "/images"},
	} {
		form := url.Values{"csrf_token": {s.csrf(ada, "/feedback")}, "category": {"bug"}, "title": {"Filters reset"}, "page": {c.sent}}
		res, _ := s.send(ada, "POST", "/feedback", form.Encode(), nil)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("filing about %.40s… = %d, want 303", c.sent, res.StatusCode)
		}
		_, body := s.send(admin, "GET", strings.SplitN(res.Header.Get("Location"), "?", 2)[0], "", nil)
		if want := `data-testid="page">` + c.want + `</a> (the page's path only)`; !strings.Contains(body, want) || strings.Contains(body, token) {
			t.Errorf("the item filed about %.40s… does not show %q alone", c.sent, want)
		}
	}
	items, err := st.FeedbackItems(context.Background(), store.FeedbackFilter{})
	if err != nil || len(items) != 3 {
		t.Fatalf("items = %+v, %v", items, err)
	}
	for _, it := range items {
		if strings.ContainsAny(it.Page, "?#") {
			t.Errorf("item %d stores the page %.60q", it.ID, it.Page)
		}
	}
	if _, csv := s.send(admin, "GET", "/admin/feedback.csv", "", nil); strings.Contains(csv, token) || strings.Contains(csv, "?q=") {
		t.Errorf("the export holds a page's query: %s", csv)
	}
}
