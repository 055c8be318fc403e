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

// noPool is the pool filter's value for the nodes in no pool: pool names are lower-case
// letters, digits and inner dashes, so it is none of them.
const noPool = "-"

// nodeFilter narrows a node list (the console's nodes page at /admin/nodes, the cluster
// page at /cluster): to names that hold name (any letter case), to one state, to one
// pool, and to one page of perPage of what is left.
type nodeFilter struct {
	path              string
	name, state, pool string
	poolID            int64 // the pool's id; 0 with noPool or none
	page, perPage     int
	removed           bool
	pools             []string // every pool's name, offered by the form
}

// nodeFilterOf reads ?name=, ?state=, ?pool= and ?page= of the node list at path, or
// answers 400 naming the one at fault.
func (h *Handler) nodeFilterOf(c *gin.Context, path string, perPage int, removed bool, pools []models.NodePool) (nodeFilter, bool) {
	f := nodeFilter{path: path, name: strings.TrimSpace(c.Query("name")), state: c.Query("state"), pool: c.Query("pool"),
		perPage: perPage, removed: removed}
	if f.state != "" && !slices.Contains(models.NodeStates, f.state) {
		h.errorPage(c, http.StatusBadRequest, "Unknown node state",
			fmt.Sprintf("State: %q is not one of %s: pick one from the list.", f.state, strings.Join(models.NodeStates, ", ")))
		return f, false
	}
	for _, p := range pools {
		f.pools = append(f.pools, p.Name)
		if p.Name == f.pool {
			f.poolID = p.ID
		}
	}
	if f.pool != "" && f.pool != noPool && f.poolID == 0 {
		h.errorPage(c, http.StatusBadRequest, "Unknown pool",
			fmt.Sprintf("Pool: there is no pool %q: pick one from the list.", f.pool))
		return f, false
	}
	var ok bool
	f.page, ok = h.pageOf(c, "page")
	return f, ok
}

// keep says whether n passes the name, state and pool filters.
func (f nodeFilter) keep(n models.Node) bool {
	switch {
	case f.state != "" && n.State != f.state:
		return false
	case f.pool == noPool && n.PoolID != nil:
		return false
	case f.poolID != 0 && (n.PoolID == nil || *n.PoolID != f.poolID):
		return false
	}
	return strings.Contains(strings.ToLower(n.Name), strings.ToLower(f.name))
}

// link is the list with this filter at page (1: none said), removed nodes shown or not
// as removed says.
func (f nodeFilter) link(page int, removed bool) string {
	q := url.Values{}
	if f.name != "" {
		q.Set("name", f.name)
	}
	if f.state != "" {
		q.Set("state", f.state)
	}
	if f.pool != "" {
		q.Set("pool", f.pool)
	}
	if removed {
		q.Set("removed", "1")
	}
	if page > 1 {
		q.Set("page", strconv.Itoa(page))
	}
	if len(q) == 0 {
		return f.path
	}
	return f.path + "?" + q.Encode()
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
	from, to, p := pageAt(len(kept), f.perPage, f.page, func(page int) string { return f.link(page, f.removed) })
	v := templates.NodesFilter{Action: f.path, Name: f.name, State: f.state, Pool: f.pool, States: models.NodeStates,
		Pools: f.pools, NoPool: noPool, Filtered: f.name != "" || f.state != "" || f.pool != "",
		Pager: p, Clear: nodeFilter{path: f.path}.link(1, f.removed), Hide: f.link(1, false), Show: f.link(1, true)}
	return kept[from:to], v
}
