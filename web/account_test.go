package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// feedbackEmailsOff is whether u turned off the e-mails about their feedback, as stored.
func feedbackEmailsOff(t *testing.T, st *store.Store, u *models.User) bool {
	t.Helper()
	off, err := st.MailOptedOut(context.Background(), u.ID, models.MailTopicFeedback)
	must(t, err)
	return off
}

// Each person turns the e-mails about their own feedback off and on on their account
// page, and only their own: the route names nobody. Bad input and a missing CSRF token
// change nothing; a change is audited; admins see the setting on the people page but
// have nothing there to change it with.
func TestAccountFeedbackEmails(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		ctx := context.Background()
		ada, adaUser := s.member("ada")
		admin := s.signIn("admin", s.password)
		adminUser, err := st.UserByUsername(ctx, "admin")
		must(t, err)

		res, page := s.send(ada, "GET", "/account", "", nil)
		if res.StatusCode != http.StatusOK || !strings.Contains(page, `name="feedback_emails" value="true" checked`) || !strings.Contains(page, "ada@example.com") {
			t.Fatalf("GET /account = %d; want the box ticked by default and ada's address", res.StatusCode)
		}
		token := s.csrf(ada, "/account")
		if res, _ := s.send(ada, "POST", "/account", "", nil); res.StatusCode != http.StatusForbidden || feedbackEmailsOff(t, st, adaUser) {
			t.Fatalf("POST without CSRF token = %d, want 403 and nothing changed", res.StatusCode)
		}
		bad := url.Values{"csrf_token": {token}, "feedback_emails": {"maybe"}}
		res, page = s.send(ada, "POST", "/account", bad.Encode(), nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(page, "E-mail me about my feedback (feedback_emails): must be true") || feedbackEmailsOff(t, st, adaUser) {
			t.Fatalf("feedback_emails=maybe = %d; want 400 naming the field and nothing changed", res.StatusCode)
		}

		res, _ = s.send(ada, "POST", "/account", url.Values{"csrf_token": {token}}.Encode(), nil)
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/account?notice=") || !feedbackEmailsOff(t, st, adaUser) {
			t.Fatalf("unticking = %d %s; want 303 back to /account and the e-mails off", res.StatusCode, res.Header.Get("Location"))
		}
		_, page = s.send(ada, "GET", res.Header.Get("Location"), "", nil)
		if strings.Contains(page, `value="true" checked`) || !strings.Contains(page, "you get no e-mails about your feedback") {
			t.Fatal("after unticking, the account page shows the box ticked or no notice")
		}

		// The admin's own account page changes the admin's setting, never ada's.
		adminToken := s.csrf(admin, "/account")
		s.send(admin, "POST", "/account", url.Values{"csrf_token": {adminToken}, "feedback_emails": {"true"}, "user": {"ada"}}.Encode(), nil)
		s.send(admin, "POST", "/account", url.Values{"csrf_token": {adminToken}, "user": {"ada"}}.Encode(), nil)
		if !feedbackEmailsOff(t, st, adaUser) || !feedbackEmailsOff(t, st, adminUser) {
			t.Fatalf("after the admin saved their own: ada off %t, admin off %t; want both off", feedbackEmailsOff(t, st, adaUser), feedbackEmailsOff(t, st, adminUser))
		}
		_, people := s.send(admin, "GET", "/admin/people?q=ada", "", nil)
		row := people[strings.Index(people, `data-user="ada"`):]
		row = row[:strings.Index(row, "</tr>")]
		if !strings.Contains(row, "feedback e-mails off") || strings.Contains(row, "feedback_emails") {
			t.Fatalf("ada's row on the people page shows no 'feedback e-mails off', or a control for it:\n%s", row)
		}

		res, _ = s.send(ada, "POST", "/account", url.Values{"csrf_token": {token}, "feedback_emails": {"true"}}.Encode(), nil)
		if res.StatusCode != http.StatusSeeOther || feedbackEmailsOff(t, st, adaUser) {
			t.Fatalf("ticking again = %d, off %t; want 303 and the e-mails on", res.StatusCode, feedbackEmailsOff(t, st, adaUser))
		}
		events, err := st.AuditEventsBefore(ctx, store.AuditFilter{ObjectTypes: []string{"user"}, ObjectID: "ada"}, 0, 50)
		must(t, err)
		var actions []string
		for i := len(events) - 1; i >= 0; i-- {
			e := events[i]
			if strings.HasPrefix(e.Action, "feedback.emails_") {
				actions = append(actions, e.Actor+":"+e.Action)
			}
		}
		if got := strings.Join(actions, " "); got != "ada:feedback.emails_off ada:feedback.emails_on" {
			t.Errorf("audited %s, want ada's off then on", got)
		}
	})
}

// The user menu of every page leads to the person's account (their name) and to their
// API tokens, each marked as the current page on its own page.
func TestUserMenuLinksAccountAndTokens(t *testing.T) {
	t.Parallel()
	s := newSite(t, storetest.Open(t, store.Config{DataDir: t.TempDir()}), false)
	ada, _ := s.member("ada")
	account := `<a href="/account" aria-label="Your account: ada" title="Your account: ada">ada</a>`
	tokens := `<a href="/tokens">API tokens</a>`
	for _, page := range []string{"/", "/jobs", "/feedback", "/projects"} {
		res, body := s.send(ada, "GET", page, "", nil)
		menu := body[strings.Index(body, `<div class="user-menu">`):]
		menu = menu[:strings.Index(menu, "</div>")]
		if res.StatusCode != http.StatusOK || !strings.Contains(menu, account) || !strings.Contains(menu, tokens) {
			t.Errorf("GET %s = %d; want a user menu with %s and %s, got:\n%s", page, res.StatusCode, account, tokens, menu)
		}
	}
	for _, c := range []struct{ page, current, other string }{
		{"/account", `<a href="/account" aria-label="Your account: ada" title="Your account: ada" aria-current="page">ada</a>`, tokens},
		{"/tokens", `<a href="/tokens" aria-current="page">API tokens</a>`, account},
	} {
		res, body := s.send(ada, "GET", c.page, "", nil)
		if res.StatusCode != http.StatusOK || !strings.Contains(body, c.current) || !strings.Contains(body, c.other) {
			t.Errorf("GET %s = %d; want %s and %s in its user menu", c.page, res.StatusCode, c.current, c.other)
		}
	}
}

// In a real browser, the account page is reached from the user menu by keyboard, and
// the box is unticked with the keyboard and saved, and stays unticked.
func TestAccountFeedbackEmailsInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	admin, err := st.UserByUsername(context.Background(), "admin")
	must(t, err)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s)
	ticked := func() bool {
		t.Helper()
		return run(t, ctx, chromedp.Evaluate[bool](`document.querySelector('#feedback-emails').checked`))
	}
	err = chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/jobs"),
		chromedp.Focus(`.user-menu a[href="/account"]`),
		browsertest.Loads(chromedp.KeyEvent(kb.Enter)),
		chromedp.WaitVisible("#feedback-emails"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if title := run(t, ctx, chromedp.Title()); title != "Your account · Gantry" {
		t.Fatalf("Enter on the user menu's account link opened %q", title)
	}
	if !ticked() {
		t.Fatal("the box is not ticked by default")
	}
	err = chromedp.Do(ctx,
		chromedp.Focus("#feedback-emails"),
		chromedp.KeyEvent(" "),
	)
	if err != nil {
		t.Fatal(err)
	}
	if ticked() {
		t.Fatal("space on the focused box did not untick it")
	}
	browsertest.Screenshot(t, ctx, "account")
	if err := chromedp.Do(ctx, browsertest.Loads(chromedp.Click("#account-save")), chromedp.WaitVisible(".notice")); err != nil {
		t.Fatal(err)
	}
	if notice := run(t, ctx, chromedp.Text(".notice")); !strings.Contains(notice, "no e-mails about your feedback") {
		t.Errorf("notice = %q", notice)
	}
	if err := chromedp.Do(ctx, browsertest.Reload(), chromedp.WaitVisible("#feedback-emails")); err != nil {
		t.Fatal(err)
	}
	if ticked() || !feedbackEmailsOff(t, st, admin) {
		t.Fatalf("after saving: ticked %t, stored off %t; want unticked and off", ticked(), feedbackEmailsOff(t, st, admin))
	}
}
