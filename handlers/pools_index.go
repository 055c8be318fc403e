package handlers

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/pools"
	"github.com/gantry-gpu/gantry/templates"
)

// PoolsIndex lists the node pools with their size, price and last decision.
func (h *Handler) PoolsIndex(c *gin.Context) {
	list, err := pools.Summaries(c.Request.Context(), h.store, time.Now())
	if err != nil {
		h.serverError(c, err)
		return
	}
	cur, err := h.cost.Currency(c.Request.Context())
	if err != nil {
		h.serverError(c, err)
		return
	}
	d := templates.PoolsData{}
	for _, s := range list {
		d.Pools = append(d.Pools, poolRow(s, cur))
	}
	render(c, http.StatusOK, templates.Pools(h.page(c, "Node pools", "admin"), d))
}
