package handlers

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/feedback"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// feedbackPerPage is how many items one page of the board lists.
const feedbackPerPage = 50

// openStatuses are what the board shows unless asked for more.
var openStatuses = []string{models.FeedbackNew, models.FeedbackPlanned, models.FeedbackInProgress}

// FeedbackIndex shows the board (open items by votes), the form, and for admins the triage view.
func (h *Handler) FeedbackIndex(c *gin.Context) {
	d := templates.FeedbackBoardData{
		Notice: c.Query("notice"),
		Form:   templates.FeedbackForm{Category: "idea", Page: safeReferrerPath(c)},
	}
	d.Form.Job = jobOfPage(d.Form.Page)
	h.renderFeedbackBoard(c, http.StatusOK, d)
}

func (h *Handler) renderFeedbackBoard(c *gin.Context, status int, d templates.FeedbackBoardData) {
	ctx := c.Request.Context()
	f := store.FeedbackFilter{ByVotes: true, Statuses: openStatuses}
	d.Status, d.Category = c.Query("status"), c.Query("category")
	switch {
	case d.Status == "all":
		f.Statuses = nil
	case slices.Contains(feedback.Statuses, d.Status):
		f.Statuses = []string{d.Status}
	case d.Status != "":
		h.errorPage(c, http.StatusBadRequest, "Unknown status", "Status "+strconv.Quote(d.Status)+" is not one of "+
			strings.Join(feedback.Statuses, ", ")+" or all (empty: the open ones): pick one from the list.")
		return
	}
	switch {
	case slices.Contains(feedback.Categories, d.Category):
		f.Category = d.Category
	case d.Category != "":
		h.errorPage(c, http.StatusBadRequest, "Unknown category", "Category "+strconv.Quote(d.Category)+" is not one of "+
			strings.Join(feedback.Categories, ", ")+" (empty: any): pick one from the list.")
		return
	}
	// "page" names the portal page a new item is about.
	page, ok := h.pageOf(c, "board_page")
	if !ok {
		return
	}
	total, err := h.feedback.BoardSize(ctx, f)
	if err != nil {
		h.serverError(c, err)
		return
	}
	link := func(page int) string {
		q := url.Values{}
		for k, v := range map[string]string{"status": d.Status, "category": d.Category} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if page > 1 {
			q.Set("board_page", strconv.Itoa(page))
		}
		if len(q) == 0 {
			return "/feedback"
		}
		return "/feedback?" + q.Encode()
	}
	from, _, pager := pageAt(total, feedbackPerPage, page, link)
	d.Pager = pager
	f.Offset, f.Limit = from, feedbackPerPage
	items, err := h.feedback.Board(ctx, f)
	if err != nil {
		h.serverError(c, err)
		return
	}
	me := principal(c).User
	rows, err := h.feedbackRows(c, items, me.ID)
	if err != nil {
		h.serverError(c, err)
		return
	}
	d.Items, d.Categories, d.Statuses = rows, feedback.Categories, feedback.Statuses
	if d.IsAdmin = permission(c).CanWrite(authz.Platform); d.IsAdmin {
		stats, err := h.feedback.Stats(ctx, 5)
		if err != nil {
			h.serverError(c, err)
			return
		}
		for _, n := range stats.Counts {
			d.Counts = append(d.Counts, templates.FeedbackCount{Category: n.Category, Status: n.Status, N: n.N})
		}
		if d.Oldest, err = h.feedbackRows(c, stats.Unanswered, me.ID); err != nil {
			h.serverError(c, err)
			return
		}
	}
	render(c, status, templates.FeedbackBoard(h.page(c, "Feedback", "feedback"), d))
}

// feedbackRows turns items into board rows with their authors and the caller's votes.
func (h *Handler) feedbackRows(c *gin.Context, items []models.FeedbackItem, me int64) ([]templates.FeedbackRow, error) {
	ctx := c.Request.Context()
	ids := make([]int64, len(items))
	for i, it := range items {
		ids[i] = it.UserID
	}
	names, err := h.store.UsernamesByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	rows := make([]templates.FeedbackRow, len(items))
	for i, it := range items {
		voted, err := h.store.HasFeedbackVote(ctx, it.ID, me)
		if err != nil {
			return nil, err
		}
		rows[i] = templates.FeedbackRow{
			ID: it.ID, Category: it.Category, Title: it.Title, Status: it.Status, Votes: it.VoteCount, Voted: voted,
			Author: names[it.UserID], Created: it.CreatedAt.UTC().Format(time.DateOnly), Answered: it.AnsweredAt != nil,
		}
	}
	return rows, nil
}

// safeReferrerPath is the portal page the user came from, by its path alone, kept only if
// it is a local path.
func safeReferrerPath(c *gin.Context) string {
	if p := feedback.PagePath(c.Query("page")); localPage(p) {
		return p
	}
	return ""
}

// maxFeedbackPage is the longest page feedback.Input takes.
const maxFeedbackPage = 500

// localPage is whether p is a path of this portal, not one a browser reads as another
// host's (//host, /\\host).
func localPage(p string) bool {
	return p == "/" || len(p) > 1 && p[0] == '/' && p[1] != '/' && p[1] != '\\' && len(p) <= maxFeedbackPage
}

// feedbackPage is the page a Feedback button files about, by its path alone (a query can
// hold filters, names or tokens; feedback.PagePath): this one's on a GET; on a form shown
// again after a POST, the page that form was on (the Referer, when it is this portal's).
func feedbackPage(c *gin.Context) string {
	u := c.Request.URL
	if c.Request.Method != http.MethodGet {
		ref, err := url.Parse(c.Request.Referer())
		if err != nil || ref.Host != c.Request.Host {
			return ""
		}
		u = ref
	}
	if p := u.EscapedPath(); localPage(p) {
		return p
	}
	return ""
}

// jobOfPage is the job whose page p is (/jobs/12, /jobs/12/telemetry), or 0. Every
// page's Feedback button asks, so it reads the digits by hand rather than by a regexp.
func jobOfPage(p string) int64 {
	rest, ok := strings.CutPrefix(p, "/jobs/")
	if !ok {
		return 0
	}
	n := 0
	for n < len(rest) && n <= 18 && '0' <= rest[n] && rest[n] <= '9' {
		n++
	}
	if n == 0 || n > 18 || (n < len(rest) && rest[n] != '/' && rest[n] != '?') {
		return 0
	}
	id, _ := strconv.ParseInt(rest[:n], 10, 64)
	return id
}
