package handlers

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
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
