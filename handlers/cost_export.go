package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
)

// CostExport answers the cost page's view as CSV: the same filters, the same scope.
func (h *Handler) CostExport(c *gin.Context) {
	user := currentUser(c)
	if user == nil {
		return
	}
	v, rows, err := h.costRows(c, user)
	if h.failed(c, err, func(fe *models.FieldError) {
		c.String(http.StatusBadRequest, "%s: %s\n", fe.Field, fe.Message)
	}) {
		return
	}
	cur, err := h.cost.Currency(c.Request.Context())
	if err != nil {
		h.serverError(c, err)
		return
	}
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="gantry-cost-`+v.filter.By+"-"+v.filter.From+"-"+v.filter.To+`.csv"`)
	c.Status(http.StatusOK)
	if err := accounting.WriteCSV(c.Writer, v.query, rows, cur); err != nil {
		c.Error(err)
	}
}
