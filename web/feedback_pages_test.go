package web_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
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

// The board lists 50 items a page (it listed the first 100 and no more, without a
// word); its links keep the filter, and a vote cast on a page goes back to it.
func TestFeedbackBoardHasPages(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		ada, u := s.member("ada")
		for i := range 120 {
			status := models.FeedbackNew
			if i%4 == 0 {
				status = models.FeedbackDone
			}
			it := &models.FeedbackItem{UserID: u.ID, Category: "idea", Title: fmt.Sprintf("idea %03d", i), Status: status, VoteCount: i}
			if err := st.CreateFeedbackItem(t.Context(), it); err != nil {
				t.Fatal(err)
			}
		}
		count := regexp.MustCompile(`data-testid="board-count">([^<]+)<`)
		for path, want := range map[string][]string{
			"/feedback":                            {"Items 1–50 of 90", "idea 119", "/feedback?board_page=2"},
			"/feedback?status=all&board_page=3":    {"Items 101–120 of 120", "idea 019", "/feedback?board_page=2&amp;status=all"},
			"/feedback?status=all&board_page=9":    {"Items 101–120 of 120", "idea 000"},
			"/feedback?category=idea&board_page=2": {"Items 51–90 of 90", "idea 001", "/feedback?category=idea"},
		} {
			body := s.mustGet(ada, path)
			if m := count.FindStringSubmatch(body); m == nil || m[1] != want[0] {
				t.Errorf("%s counts %v, want %q", path, m, want[0])
			}
			for _, w := range want[1:] {
				if !strings.Contains(body, w) {
					t.Errorf("%s lacks %q", path, w)
				}
			}
		}
		res, _ := s.send(ada, "GET", "/feedback?board_page=x", "", nil)
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("page x = %d, want 400", res.StatusCode)
		}
		items, err := st.FeedbackItems(t.Context(), store.FeedbackFilter{Statuses: []string{models.FeedbackNew}, ByVotes: true, Offset: 60, Limit: 1})
		if err != nil || len(items) != 1 {
			t.Fatalf("the 61st open item: %v, %v", items, err)
		}
		token := s.csrf(ada, "/feedback")
		res, _ = s.send(ada, "POST", fmt.Sprintf("/feedback/%d/vote", items[0].ID), url.Values{"csrf_token": {token}, "vote": {"true"}}.Encode(),
			map[string]string{"Referer": s.srv.URL + "/feedback?board_page=2"})
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/feedback?board_page=2" {
			t.Errorf("a vote from page 2 went to %d %q", res.StatusCode, loc)
		}
	})
}
