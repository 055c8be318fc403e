package handlers

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// CostRulesEvaluate runs every enabled rule now, on demand (audited), and says what it raised;
// the leader sends the notifications at its next round.
func (h *Handler) CostRulesEvaluate(c *gin.Context) {
	rep, err := h.gov.EvaluateNow(c.Request.Context(), time.Now())
	if err != nil {
		h.serverError(c, err)
		return
	}
	notice := fmt.Sprintf("Evaluated the rules: %d new alert(s).", len(rep.Raised))
	if len(rep.Problems) > 0 {
		notice += " Not evaluated or failed: " + strings.Join(rep.Problems, "; ") + "."
	}
	c.Redirect(http.StatusSeeOther, "/admin/cost/rules?notice="+url.QueryEscape(notice))
}
