package handlers

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
)

// listedNodes reads the nodes a node list shows, by name: those not removed, or with
// withRemoved every node, and how many were removed (shown or not).
func (h *Handler) listedNodes(ctx context.Context, withRemoved bool) ([]models.Node, int, error) {
	removed, err := h.store.CountRemovedNodes(ctx)
	if err != nil {
		return nil, 0, err
	}
	var nodes []models.Node
	if withRemoved && removed > 0 {
		nodes, err = h.store.NodesWithRemoved(ctx)
	} else {
		nodes, err = h.store.Nodes(ctx)
	}
	return nodes, removed, err
}

// removedOnPage reads ?removed= of a page that lists nodes: 1 shows the removed ones
// too, 0 or nothing hides them. Anything else is answered with a 400 page, and ok is
// false.
func (h *Handler) removedOnPage(c *gin.Context) (show, ok bool) {
	switch v := c.Query("removed"); v {
	case "", "0":
		return false, true
	case "1":
		return true, true
	default:
		h.errorPage(c, http.StatusBadRequest, "Unknown node filter",
			fmt.Sprintf("Removed: %q is not 1 (show removed nodes too) or 0 (hide them).", v))
		return false, false
	}
}

// removedDate writes when a node was removed as its UTC date, "" when it was not.
func removedDate(n models.Node) string {
	if n.RemovedAt == nil {
		return ""
	}
	return n.RemovedAt.UTC().Format(time.DateOnly)
}
