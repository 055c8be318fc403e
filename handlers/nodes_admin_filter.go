package handlers

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/templates"
)

// nodesPerPage is how many nodes one page of the console lists: each row carries its
// actions, and a thousand rows made a page of over a megabyte.
const nodesPerPage = 100

// nodeFilter narrows the nodes page: to names that hold name (any letter case), to one
// state, and to one page of what is left.
type nodeFilter struct {
	name, state string
	page        int
	removed     bool
}

// nodeFilterOf reads ?name=, ?state= and ?page= of the nodes page, or answers 400
// naming the one at fault.
func (h *Handler) nodeFilterOf(c *gin.Context, removed bool) (nodeFilter, bool) {
	f := nodeFilter{name: strings.TrimSpace(c.Query("name")), state: c.Query("state"), removed: removed}
	if f.state != "" && !slices.Contains(models.NodeStates, f.state) {
		h.errorPage(c, http.StatusBadRequest, "Unknown node state",
			fmt.Sprintf("State: %q is not one of %s: pick one from the list.", f.state, strings.Join(models.NodeStates, ", ")))
		return f, false
	}
	var ok bool
	f.page, ok = h.pageOf(c, "page")
	return f, ok
}

// keep says whether n passes the name and state filters.
func (f nodeFilter) keep(n models.Node) bool {
	return (f.state == "" || n.State == f.state) && strings.Contains(strings.ToLower(n.Name), strings.ToLower(f.name))
}

// link is the nodes page with this filter at page (1: none said), removed nodes
// shown or not as removed says.
func (f nodeFilter) link(page int, removed bool) string {
	q := url.Values{}
	if f.name != "" {
		q.Set("name", f.name)
	}
	if f.state != "" {
		q.Set("state", f.state)
	}
	if removed {
		q.Set("removed", "1")
	}
	if page > 1 {
		q.Set("page", strconv.Itoa(page))
	}
	if len(q) == 0 {
		return "/admin/nodes"
	}
	return "/admin/nodes?" + q.Encode()
}

// apply returns the nodes of the filter's page among nodes (the last page where it asks
// for one past the end) and what the page says of them.
func (f nodeFilter) apply(nodes []models.Node) ([]models.Node, templates.NodesFilter) {
	var kept []models.Node
	for _, n := range nodes {
		if f.keep(n) {
			kept = append(kept, n)
		}
	}
	from, to, p := pageAt(len(kept), nodesPerPage, f.page, func(page int) string { return f.link(page, f.removed) })
	v := templates.NodesFilter{Name: f.name, State: f.state, States: models.NodeStates, Filtered: f.name != "" || f.state != "",
		Pager: p, Clear: nodeFilter{}.link(1, f.removed), Hide: f.link(1, false), Show: f.link(1, true)}
	return kept[from:to], v
}
