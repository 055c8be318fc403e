package web_test

import (
	"context"
	"encoding/csv"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// member creates a signed-in user with no global role and returns their browser.
func (s *site) member(name string) (*http.Client, *models.User) {
	s.t.Helper()
	ctx := context.Background()
	u := &models.User{Username: name, Email: name + "@example.com"}
	if err := s.st.CreateUser(ctx, u); err != nil {
		s.t.Fatal(err)
	}
	pw, err := s.id.ResetPassword(ctx, name)
	if err != nil {
		s.t.Fatal(err)
	}
	return s.signIn(name, pw), u
}

func TestFeedbackLoopThroughThePages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		ctx := context.Background()
		ada, adaUser := s.member("ada")
		bob, _ := s.member("bob")
		admin := s.signIn("admin", s.password)

		token := s.csrf(ada, "/feedback")
		form := url.Values{"csrf_token": {token}, "category": {"capacity"}, "title": {"More A100s on Mondays"}, "body": {"Queue waits 3 h"}, "page": {"/jobs"}}

		res, _ := s.send(ada, "POST", "/feedback", url.Values{"category": {"idea"}, "title": {"no token"}}.Encode(), nil)
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("POST without CSRF token = %d, want 403", res.StatusCode)
		}
		bad := url.Values{"csrf_token": {token}, "category": {"idea"}, "title": {"x"}}
		res, body := s.send(ada, "POST", "/feedback", bad.Encode(), nil)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Title: must be 3 to 200 characters") {
			t.Fatalf("short title = %d, want 400 naming the title", res.StatusCode)
		}
		if items, _ := st.FeedbackItems(ctx, store.FeedbackFilter{}); len(items) != 0 {
			t.Fatalf("refused posts stored %d items", len(items))
		}

		res, _ = s.send(ada, "POST", "/feedback", form.Encode(), nil)
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/feedback/") {
			t.Fatalf("submit = %d %s", res.StatusCode, res.Header.Get("Location"))
		}
		item := strings.SplitN(strings.TrimPrefix(res.Header.Get("Location"), "/feedback/"), "?", 2)[0]

		bobToken := s.csrf(bob, "/feedback")
		res, _ = s.send(bob, "POST", "/feedback/"+item+"/vote", url.Values{"csrf_token": {bobToken}, "vote": {"true"}}.Encode(), nil)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("vote = %d", res.StatusCode)
		}
		_, board := s.send(bob, "GET", "/feedback", "", nil)
		if !strings.Contains(board, "More A100s on Mondays") || !strings.Contains(board, `aria-pressed="true"`) {
			t.Fatalf("board does not show the item with bob's vote")
		}
		for q, says := range map[string]string{
			"status=capacity":  `Status &#34;capacity&#34; is not one of new, planned`,
			"category=planned": `Category &#34;planned&#34; is not one of bug, idea`,
		} {
			if res, body := s.send(bob, "GET", "/feedback?"+q, "", nil); res.StatusCode != http.StatusBadRequest || !strings.Contains(body, says) {
				t.Errorf("board ?%s = %d; want 400 saying %s", q, res.StatusCode, says)
			}
		}
		if _, board := s.send(bob, "GET", "/feedback?status=all&category=capacity", "", nil); !strings.Contains(board, "More A100s on Mondays") {
			t.Error("the board of every status in the item's category lacks it")
		}

		res, _ = s.send(ada, "POST", "/feedback/"+item+"/answer", url.Values{"csrf_token": {token}, "status": {"done"}, "answer": {"self-served"}}.Encode(), nil)
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("a user answering = %d, want 403", res.StatusCode)
		}
		adminToken := s.csrf(admin, "/feedback")
		answer := url.Values{"csrf_token": {adminToken}, "status": {"planned"}, "answer": {"Two A100 nodes arrive in January."}}
		res, _ = s.send(admin, "POST", "/feedback/"+item+"/answer", answer.Encode(), nil)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("admin answer = %d", res.StatusCode)
		}
		_, page := s.send(ada, "GET", "/feedback/"+item, "", nil)
		if !strings.Contains(page, "Two A100 nodes arrive in January.") || !strings.Contains(page, `data-testid="status">planned<`) {
			t.Fatalf("the author does not see the answer")
		}
		notes, err := st.NotificationsOfUser(ctx, adaUser.ID, 5)
		if err != nil || len(notes) != 1 || !strings.Contains(notes[0].Title, "planned") {
			t.Fatalf("author notification = %+v, %v", notes, err)
		}

		res, _ = s.send(ada, "GET", "/admin/feedback.csv", "", nil)
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("a user exporting feedback = %d, want 403", res.StatusCode)
		}
		res, csvBody := s.send(admin, "GET", "/admin/feedback.csv", "", nil)
		rows, err := csv.NewReader(strings.NewReader(csvBody)).ReadAll()
		if res.StatusCode != 200 || err != nil || len(rows) != 2 || rows[1][4] != "planned" || rows[1][5] != "1" {
			t.Fatalf("export = %d %q %v", res.StatusCode, csvBody, err)
		}
		res, _ = s.send(ada, "GET", "/feedback/999", "", nil)
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("missing item = %d, want 404", res.StatusCode)
		}
	})
}
