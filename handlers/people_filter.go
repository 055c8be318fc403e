package handlers

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/templates"
)

// peoplePerPage is how many people one page of the console lists, each row with its
// forms.
const peoplePerPage = 100

// peopleFilter narrows the people page: to those whose username, name or e-mail holds
// q (any letter case), and to one page of them.
type peopleFilter struct {
	q    string
	page int
}

// peopleFilterOf reads ?q= and ?page= of the people page, or answers 400 naming the
// page.
func (h *Handler) peopleFilterOf(c *gin.Context) (peopleFilter, bool) {
	page, ok := h.pageOf(c, "page")
	return peopleFilter{q: strings.TrimSpace(c.Query("q")), page: page}, ok
}

// link is the people page with this search at page (1: none said).
func (f peopleFilter) link(page int) string {
	q := url.Values{}
	if f.q != "" {
		q.Set("q", f.q)
	}
	if page > 1 {
		q.Set("page", strconv.Itoa(page))
	}
	if len(q) == 0 {
		return "/admin/people"
	}
	return "/admin/people?" + q.Encode()
}

// apply returns the people of the filter's page among users (the last page where it
// asks for one past the end) and the pager that says where the page is.
func (f peopleFilter) apply(users []models.User) ([]models.User, templates.Pager) {
	q := strings.ToLower(f.q)
	var kept []models.User
	for _, u := range users {
		if q == "" || strings.Contains(strings.ToLower(u.Username+" "+u.DisplayName+" "+u.Email), q) {
			kept = append(kept, u)
		}
	}
	from, to, p := pageAt(len(kept), peoplePerPage, f.page, f.link)
	return kept[from:to], p
}
