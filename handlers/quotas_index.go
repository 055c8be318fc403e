package handlers

import (
	"math"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/quotas"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// waitingShown bounds the waiting jobs the quotas page lists.
const waitingShown = 20

// QuotasIndex lists the quotas with their current use, the jobs of teams with quotas
// that wait and why, and the form to set one (?team=&model= fills it with that quota).
func (h *Handler) QuotasIndex(c *gin.Context) {
	d := templates.QuotasData{Notice: c.Query("notice"), Warning: c.Query("warning"),
		Form: templates.QuotaForm{Team: c.Query("team"), Model: c.Query("model"), CPU: "0", Memory: "0"}}
	h.renderQuotas(c, http.StatusOK, d, true)
}

// renderQuotas renders the page; fill takes the form from the quota it names, if any.
func (h *Handler) renderQuotas(c *gin.Context, status int, d templates.QuotasData, fill bool) {
	ctx := c.Request.Context()
	rows, free, err := h.quotas.Overview(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	budgets, err := h.store.Budgets(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	cur, err := h.cost.Currency(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	budgetOf := map[int64]string{}
	for _, b := range budgets {
		if b.TeamID != nil {
			budgetOf[*b.TeamID] = accounting.FormatAmount(b.AmountMicros, cur)
		}
	}
	limited := map[string]bool{}
	for _, r := range rows {
		limited[r.Team] = true
		d.Rows = append(d.Rows, quotaRow(r, budgetOf[r.TeamID]))
		if fill && r.Team == d.Form.Team && r.GPUModel == d.Form.Model {
			d.Form, d.Editing = quotaForm(r), true
		}
	}
	for _, u := range free {
		d.Unlimited = append(d.Unlimited, templates.UnlimitedRow{Team: u.Team, Model: u.GPUModel, Use: quotas.GPUs(u.UseMilli)})
	}
	if d.Waiting, d.WaitingMore, err = h.waitingOnQuota(c, limited); err != nil {
		h.serverError(c, err)
		return
	}
	teams, err := h.store.Teams(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	for _, t := range teams {
		if !t.Archived {
			d.Teams = append(d.Teams, t.Name)
		}
	}
	gpuModels, err := h.store.GPUModels(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	d.Models = gpuModels
	d.CanAdmin = canAdmin(c)
	if d.Changes, err = h.recentChanges(ctx, store.AuditFilter{ObjectTypes: []string{"quota"}}); err != nil {
		h.serverError(c, err)
		return
	}
	render(c, status, templates.Quotas(h.page(c, "Quotas", "admin"), d))
}

// waitingOnQuota lists the first queued jobs of teams with quotas, oldest first, with
// why they wait, and whether more of them wait.
func (h *Handler) waitingOnQuota(c *gin.Context, limited map[string]bool) ([]templates.WaitingRow, bool, error) {
	ctx := c.Request.Context()
	if len(limited) == 0 {
		return nil, false, nil
	}
	queued, err := h.store.QueuedJobs(ctx, 500)
	if err != nil {
		return nil, false, err
	}
	projects, err := h.store.Projects(ctx)
	if err != nil {
		return nil, false, err
	}
	teams, err := h.store.Teams(ctx)
	if err != nil {
		return nil, false, err
	}
	teamName := map[int64]string{}
	for _, t := range teams {
		teamName[t.ID] = t.Name
	}
	project := map[int64]models.Project{}
	for _, p := range projects {
		project[p.ID] = p
	}
	var out []templates.WaitingRow
	for _, j := range queued {
		p := project[j.ProjectID]
		if team := teamName[p.TeamID]; limited[team] {
			if len(out) == waitingShown {
				return out, true, nil
			}
			out = append(out, templates.WaitingRow{ID: j.ID, Name: j.Name, Team: team, Project: p.Name, Reason: j.PendingReason})
		}
	}
	return out, false, nil
}

func quotaRow(r quotas.Row, budget string) templates.QuotaRow {
	unlimited := func(p *int64, none string) string {
		if p == nil {
			return none
		}
		return quotas.GPUs(*p) + " GPUs"
	}
	row := templates.QuotaRow{ID: r.ID, Team: r.Team, Model: r.GPUModel, Cohort: r.Cohort, Guaranteed: quotas.GPUs(r.NominalMilli),
		Borrowing: unlimited(r.BorrowingLimitMilli, "no limit"), Lending: unlimited(r.LendingLimitMilli, "all unused"),
		Use: quotas.GPUs(r.UseMilli), Borrowed: quotas.GPUs(r.BorrowedMilli), Over: r.BorrowedMilli > 0, Budget: budget}
	if r.Cohort == "" {
		row.Borrowing = "none (no cohort)"
	}
	row.CPU, row.CPUUse, row.CPULimits = resourceCells(r.Cohort, r.CPUMilli, r.CPUUseMilli, r.CPUBorrowedMilli, r.CPUBorrowingLimitMilli, r.CPULendingLimitMilli, quotas.Cores)
	row.Memory, row.MemoryUse, row.MemoryLimits = resourceCells(r.Cohort, r.MemoryMiB, r.MemoryUseMiB, r.MemoryBorrowedMiB, r.MemoryBorrowingLimitMiB, r.MemoryLendingLimitMiB, quotas.GiB)
	return row
}

// resourceCells writes a CPU or memory quota for the table: the guarantee ("–" without
// one), what is in use and borrowed, and what may be borrowed and is lent.
func resourceCells(cohort string, nominal, use, borrowed int64, borrowing, lending *int64, count func(int64) string) (string, string, string) {
	inUse := count(use) + " in use"
	if nominal == 0 {
		return "–", inUse + ", no quota", ""
	}
	if borrowed > 0 {
		inUse += ", " + count(borrowed) + " borrowed"
	}
	if cohort == "" {
		return count(nominal), inUse, ""
	}
	limits := "may borrow any"
	if borrowing != nil {
		limits = "may borrow " + count(*borrowing)
	}
	if lending != nil {
		limits += "; lends at most " + count(*lending)
	} else {
		limits += "; lends all unused"
	}
	return count(nominal), inUse, limits
}

func quotaForm(r quotas.Row) templates.QuotaForm {
	opt := func(p *int64, figure func(int64) string) string {
		if p == nil {
			return ""
		}
		return figure(*p)
	}
	gib := func(mib int64) string {
		return strconv.FormatFloat(math.Round(float64(mib)/1024*1000)/1000, 'f', -1, 64)
	}
	return templates.QuotaForm{Team: r.Team, Model: r.GPUModel, Cohort: r.Cohort, Guaranteed: quotas.GPUs(r.NominalMilli),
		Borrowing: opt(r.BorrowingLimitMilli, quotas.GPUs), Lending: opt(r.LendingLimitMilli, quotas.GPUs),
		CPU: quotas.GPUs(r.CPUMilli), CPUBorrowing: opt(r.CPUBorrowingLimitMilli, quotas.GPUs), CPULending: opt(r.CPULendingLimitMilli, quotas.GPUs),
		Memory: gib(r.MemoryMiB), MemoryBorrowing: opt(r.MemoryBorrowingLimitMiB, gib), MemoryLending: opt(r.MemoryLendingLimitMiB, gib)}
}
