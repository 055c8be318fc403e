package handlers

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// maxChartSeries is how many keys the chart stacks; the rest are summed as "other".
const maxChartSeries = 6

// CostShow is the cost page: spend over time stacked by a dimension, with its numbers
// in a table, the top jobs and users, and the budgets the user may see.
func (h *Handler) CostShow(c *gin.Context) {
	user := currentUser(c)
	if user == nil {
		return
	}
	now := time.Now().UTC()
	d := templates.CostData{Dimensions: costOptions(accounting.Dimensions, "resource", "job"), Buckets: costOptions(accounting.Buckets),
		Resources: append([]templates.Option{{Value: "", Label: "all"}}, costOptions(accounting.Resources)...)}
	v, err := h.costRequest(c, user, now)
	if v.filter.Bucket == "" { // the page shows spend over time
		v.filter.Bucket, v.query.Bucket = "day", "day"
	}
	d.Filter, d.Scope = v.filter, costScope(v)
	d.Settings = permission(c).CanRead(authz.Platform)
	acc := h.cost
	invalid := func(fe *models.FieldError) {
		d.Error, d.Field = fieldMessage(fe), fe.Field
		render(c, http.StatusBadRequest, templates.Cost(h.page(c, "Cost", "cost"), d))
	}
	if h.failed(c, err, invalid) {
		return
	}
	ctx := c.Request.Context()
	// With no rates set every figure is nothing: the page says why rather than show 0.00.
	if d.NoRates, err = h.noRates(ctx); err != nil {
		h.serverError(c, err)
		return
	}
	d.CanSetRates = canAdmin(c)
	if d.Currency, err = acc.Currency(ctx); err != nil {
		h.serverError(c, err)
		return
	}
	if v.none() {
		render(c, http.StatusOK, templates.Cost(h.page(c, "Cost", "cost"), d))
		return
	}
	rows, err := acc.Rollup(ctx, v.query)
	if h.failed(c, err, invalid) {
		return
	}
	d.Chart, d.Table = costChartAndTable(v.query, rows)
	d.Table.Unit = d.Currency
	d.CSVHref = "/cost.csv?" + costParams(v.filter)
	top := v.query
	top.Bucket, top.Limit, top.ChargedOnly = "", 10, true
	for by, dst := range map[string]*[]templates.CostLine{"job": &d.TopJobs, "user": &d.TopUsers} {
		top.By = by
		lines, err := acc.Rollup(ctx, top)
		if err != nil {
			h.serverError(c, err)
			return
		}
		for _, l := range lines {
			*dst = append(*dst, templates.CostLine{Label: l.Label, Amount: accounting.FormatAmount(l.AmountMicros, d.Currency)})
		}
	}
	if err := h.costPanels(c, v, &d); err != nil {
		h.serverError(c, err)
		return
	}
	if d.Budgets, err = h.costBudgets(c, acc, v, now); err != nil {
		h.serverError(c, err)
		return
	}
	render(c, http.StatusOK, templates.Cost(h.page(c, "Cost", "cost"), d))
}

// costChartAndTable lays rows out per bucket and series: the most expensive keys each
// get a series, the rest are summed as "other". Chart and table show the same numbers.
func costChartAndTable(q accounting.Query, rows []accounting.Row) (templates.CostChart, templates.CostTable) {
	totals := map[string]int64{}
	for _, r := range rows {
		totals[r.Label] += r.AmountMicros
	}
	keys := make([]string, 0, len(totals))
	for k := range totals {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if totals[a] != totals[b] {
			if totals[a] > totals[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	series := keys
	if len(keys) > maxChartSeries {
		series = append(slices.Clone(keys[:maxChartSeries-1]), "other")
	}
	if q.By == "" {
		series = []string{"total"}
	}
	column := func(label string) int {
		if q.By == "" {
			return 0
		}
		if i := slices.Index(series, label); i >= 0 {
			return i
		}
		return len(series) - 1
	}
	var buckets []string
	index := map[string]int{}
	var amounts [][]int64
	for _, r := range rows {
		name := r.Bucket.Format(time.DateOnly)
		if _, ok := index[name]; !ok {
			index[name] = len(buckets)
			buckets = append(buckets, name)
			amounts = append(amounts, make([]int64, len(series)))
		}
		amounts[index[name]][column(r.Label)] += r.AmountMicros
	}
	t := templates.CostTable{Series: series, Heading: strings.ToUpper(q.Bucket[:1]) + q.Bucket[1:]}
	colTotals := make([]int64, len(series))
	for b, name := range buckets {
		row := templates.CostRow{Bucket: name}
		var sum int64
		for s, v := range amounts[b] {
			row.Cells = append(row.Cells, accounting.FormatMoney(v))
			sum += v
			colTotals[s] += v
		}
		row.Total = accounting.FormatMoney(sum)
		t.Rows = append(t.Rows, row)
		t.Micros += sum
	}
	for _, v := range colTotals {
		t.Totals = append(t.Totals, accounting.FormatMoney(v))
	}
	t.Total = accounting.FormatMoney(t.Micros)
	return templates.NewCostChart(buckets, series, amounts), t
}

// costPanels fills the cost per GPU model and the efficiency panel for what v covers.
func (h *Handler) costPanels(c *gin.Context, v costView, d *templates.CostData) error {
	ctx := c.Request.Context()
	q := v.query
	q.By, q.Bucket, q.Resources = store.ByGPUModel, "", []string{models.ResourceGPU}
	rows, err := h.cost.Rollup(ctx, q)
	if err != nil {
		return err
	}
	for _, r := range rows {
		d.GPUModels = append(d.GPUModels, templates.GPUModelLine{Model: r.Label, GPUHours: gpuHours(r.QuantityMilli), Amount: accounting.FormatMoney(r.AmountMicros)})
	}
	var projects []int64
	if !v.all {
		projects = v.query.ProjectIDs
	}
	idle, err := h.gov.IdleCosts(ctx, v.query.From, v.query.To, projects)
	if err != nil {
		return err
	}
	var total int64
	for _, e := range idle {
		d.Efficiency = append(d.Efficiency, templates.EfficiencyLine{Project: e.Project, GPUCost: accounting.FormatMoney(e.GPUMicros),
			Measured: accounting.FormatMoney(e.MeasuredMicros), GPUHours: gpuHours(e.GPUMinutes * 1000 / 60), IdlePct: pct(e.IdlePercent()),
			IdleCost: accounting.FormatMoney(e.IdleMicros)})
		total += e.IdleMicros
	}
	d.IdleTotal = accounting.FormatMoney(total)
	return nil
}

// gpuHours writes milli-GPU-hours with one decimal.
func gpuHours(milli int64) string { return strconv.FormatFloat(float64(milli)/1000, 'f', 1, 64) }

// costBudgets is the standing of the budgets of what v covers.
func (h *Handler) costBudgets(c *gin.Context, acc *accounting.Accounting, v costView, now time.Time) ([]templates.BudgetLine, error) {
	ctx := c.Request.Context()
	statuses, err := acc.BudgetStatuses(ctx, now, 7*24*time.Hour)
	if err != nil {
		return nil, err
	}
	projects, err := h.store.Projects(ctx)
	if err != nil {
		return nil, err
	}
	teams, err := h.store.Teams(ctx)
	if err != nil {
		return nil, err
	}
	visibleTeams := map[int64]bool{}
	for _, p := range projects {
		if v.all || slices.Contains(v.query.ProjectIDs, p.ID) {
			visibleTeams[p.TeamID] = true
		}
	}
	var out []templates.BudgetLine
	for _, st := range statuses {
		b := st.Budget
		owner := ""
		switch {
		case b.TeamID != nil && visibleTeams[*b.TeamID]:
			for _, t := range teams {
				if t.ID == *b.TeamID {
					owner = "team " + t.Name
				}
			}
		case b.ProjectID != nil && (v.all || slices.Contains(v.query.ProjectIDs, *b.ProjectID)):
			for _, p := range projects {
				if p.ID == *b.ProjectID {
					owner = "project " + p.Name
				}
			}
		}
		if owner == "" {
			continue
		}
		crossed := "none"
		if len(st.Crossed) > 0 {
			var parts []string
			for _, t := range st.Crossed {
				parts = append(parts, itoa(t)+"%")
			}
			crossed = strings.Join(parts, ", ")
		}
		out = append(out, templates.BudgetLine{Owner: owner, Amount: accounting.FormatMoney(b.AmountMicros),
			Spent: accounting.FormatMoney(st.Spent), SpentPct: pct(st.SpentPercent()), Forecast: accounting.FormatMoney(st.Forecast),
			ForecastPct: pct(st.ForecastPercent()), Crossed: crossed, Over: st.Forecast > b.AmountMicros})
	}
	return out, nil
}

func costOptions(values []string, skip ...string) []templates.Option {
	var out []templates.Option
	for _, v := range values {
		if !slices.Contains(skip, v) {
			out = append(out, templates.Option{Value: v, Label: strings.ReplaceAll(v, "_", " ")})
		}
	}
	return out
}

func pct(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) + "%" }
