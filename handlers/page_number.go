package handlers

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/templates"
)

// pageOf reads the page number of a paged list from the query parameter param: 1 when
// absent; anything but a whole number from 1 is answered with a 400 page naming it, and
// ok is false.
func (h *Handler) pageOf(c *gin.Context, param string) (page int, ok bool) {
	p := c.Query(param)
	if p == "" {
		return 1, true
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 {
		h.errorPage(c, http.StatusBadRequest, "Bad page", fmt.Sprintf("%s: %q is not a page number, a whole number from 1; follow the page's own links.", fieldLabel(param), p))
		return 0, false
	}
	return n, true
}

// pageAt places page among total rows, perPage a page (the last page when it asks for
// one past the end): the range [from, to) of its rows, and its pager, whose addresses
// link makes of a page number.
func pageAt(total, perPage, page int, link func(page int) string) (from, to int, p templates.Pager) {
	pages := max(1, (total+perPage-1)/perPage)
	page = min(page, pages)
	from, to = (page-1)*perPage, min(page*perPage, total)
	p = templates.Pager{Total: total, From: from + 1, To: to, Here: link(page)}
	if page > 1 {
		p.Prev = link(page - 1)
	}
	if page < pages {
		p.Next = link(page + 1)
	}
	return from, to, p
}
