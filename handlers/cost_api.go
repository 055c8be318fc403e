package handlers

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/accounting"
)

// apiCost is the cost page's view in the JSON API: what it covers and its rows.
type apiCost struct {
	From     string `json:"from"`
	To       string `json:"to"`
	By       string `json:"by"`
	Bucket   string `json:"bucket"`
	Resource string `json:"resource"`
	// Unit is what quantities count, given only for one resource: others do not add up.
	Unit string `json:"unit,omitempty"`
	// All says the view covers every team and the cost of GPUs no job held (admins and
	// auditors); otherwise it covers Projects, the projects where the caller reads cost.
	All      bool     `json:"all"`
	Projects []string `json:"projects"`
	Currency string   `json:"currency"` // the ISO 4217 code of every amount
	// NoRates says that no cost rate is set at all, so that every amount is nothing.
	NoRates     bool          `json:"no_rates"`
	TotalMicros int64         `json:"total_micros"`
	Total       string        `json:"total"`
	Rows        []apiCostLine `json:"rows"`
}

// apiCostLine is the cost of one key in one bucket; money as integer micro-units and
// as an exact decimal, as the CSV export writes it.
type apiCostLine struct {
	Bucket       string `json:"bucket,omitempty"`
	Key          int64  `json:"key,omitempty"`
	Label        string `json:"label,omitempty"`
	Quantity     string `json:"quantity,omitempty"`
	AmountMicros int64  `json:"amount_micros"`
	Amount       string `json:"amount"`
}

// CostAPIShow answers the cost page's view as JSON: the same filters (by, bucket, from,
// to, resource; an empty by or bucket sums over it) and the same scope.
func (h *Handler) CostAPIShow(c *gin.Context) {
	user := currentUser(c)
	if user == nil {
		return
	}
	v, rows, err := h.costRows(c, user)
	if h.failed(c, err, nil) {
		return
	}
	out := apiCost{From: v.filter.From, To: v.filter.To, By: v.filter.By, Bucket: v.filter.Bucket, Resource: v.filter.Resource,
		All: v.all, Projects: append([]string{}, v.names...), Rows: make([]apiCostLine, 0, len(rows))}
	if v.filter.Resource != "" {
		out.Unit = accounting.QuantityUnit(v.filter.Resource)
	}
	ctx := c.Request.Context()
	if out.Currency, err = h.cost.Currency(ctx); err != nil {
		h.serverError(c, err)
		return
	}
	if out.NoRates, err = h.noRates(ctx); err != nil {
		h.serverError(c, err)
		return
	}
	for _, r := range rows {
		line := apiCostLine{Key: r.Key, Label: r.Label, AmountMicros: r.AmountMicros, Amount: accounting.FormatMicros(r.AmountMicros)}
		if v.filter.Bucket != "" {
			line.Bucket = r.Bucket.Format(time.DateOnly)
		}
		if out.Unit != "" {
			line.Quantity = accounting.FormatMilli(r.QuantityMilli)
		}
		out.Rows = append(out.Rows, line)
		out.TotalMicros += r.AmountMicros
	}
	out.Total = accounting.FormatMicros(out.TotalMicros)
	c.JSON(http.StatusOK, out)
}
