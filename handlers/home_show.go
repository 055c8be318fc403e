package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// homeRecent is how many of the user's jobs the home page looks at.
const homeRecent = 50

// HomeShow is the home page: the user's running and recent jobs, their teams' spend and
// quota use this month, the alerts and messages that concern them, and the cluster at
// a glance; empty parts say what to do next.
func (h *Handler) HomeShow(c *gin.Context) {
	ctx := c.Request.Context()
	user := principal(c).User
	now := time.Now().UTC()
	d := templates.HomeData{User: user.Username}
	counts, err := h.store.JobCountsByState(ctx, models.JobQueued, models.JobRunning)
	if err != nil {
		h.serverError(c, err)
		return
	}
	d.QueuedJobs, d.RunningJobs = counts[models.JobQueued], counts[models.JobRunning]
	if d.Nodes, err = h.store.CountNodes(ctx); err != nil {
		h.serverError(c, err)
		return
	}
	// The database and its schema concern those who run the platform, not its users.
	if user.IsAdmin || user.IsAuditor {
		st, err := h.store.SchemaStatus(ctx)
		if err != nil {
			h.serverError(c, err)
			return
		}
		d.Database, d.SchemaVersion = h.store.Dialect(), st.Current
	}
	writable, err := h.submitProjects(ctx, user.ID)
	if err != nil {
		h.serverError(c, err)
		return
	}
	d.CanSubmit = len(writable) > 0
	mine, err := h.homeJobs(ctx, user.ID, &d, now)
	if err != nil {
		h.serverError(c, err)
		return
	}
	teams, projects, err := h.homeTeams(ctx, user.ID, &d, now)
	if err != nil {
		h.serverError(c, err)
		return
	}
	if err := h.homeAlerts(ctx, user.ID, teams, projects, mine, &d); err != nil {
		h.serverError(c, err)
		return
	}
	d.CanSetRates = canAdmin(c)
	render(c, http.StatusOK, templates.Home(h.page(c, "Home", "home"), d))
}

// homeJobs fills in the user's jobs that run or wait, and those that ended lately, and
// returns the ids of all it read.
func (h *Handler) homeJobs(ctx context.Context, userID int64, d *templates.HomeData, now time.Time) ([]int64, error) {
	js, err := h.store.Jobs(ctx, store.JobFilter{UserID: userID, Limit: homeRecent})
	if err != nil {
		return nil, err
	}
	names := map[int64]string{}
	var ids []int64
	for _, j := range js {
		ids = append(ids, j.ID)
		if _, ok := names[j.ProjectID]; !ok {
			p, err := h.store.ProjectByID(ctx, j.ProjectID)
			if err != nil {
				return nil, err
			}
			names[j.ProjectID] = p.Name
		}
		row := templates.HomeJob{ID: j.ID, Name: j.Name, Project: names[j.ProjectID], State: j.State}
		switch {
		case models.IsTerminal(j.State) && len(d.Recent) < 5:
			if j.FinishedAt != nil {
				row.When = ago(now, *j.FinishedAt)
			}
			d.Recent = append(d.Recent, row)
		case !models.IsTerminal(j.State):
			row.When = ago(now, j.SubmittedAt)
			if j.StartedAt != nil {
				row.When = ago(now, *j.StartedAt)
			}
			if j.State == models.JobQueued {
				row.Why = j.PendingReason
			}
			d.Active = append(d.Active, row)
		}
	}
	return ids, nil
}

// homeTeams fills in the teams of the user's projects: spend this month, budget, and
// GPU quota use now. It returns the teams' and projects' ids.
func (h *Handler) homeTeams(ctx context.Context, userID int64, d *templates.HomeData, now time.Time) ([]int64, []int64, error) {
	ms, err := h.store.MembershipsOfUser(ctx, userID)
	if err != nil || len(ms) == 0 {
		return nil, nil, err
	}
	var teamIDs, projectIDs []int64
	for _, m := range ms {
		p, err := h.store.ProjectByID(ctx, m.ProjectID)
		if err != nil {
			return nil, nil, err
		}
		projectIDs = append(projectIDs, p.ID)
		if !slices.Contains(teamIDs, p.TeamID) {
			teamIDs = append(teamIDs, p.TeamID)
		}
	}
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	spend, err := h.cost.Rollup(ctx, accounting.Query{By: store.ByTeam, From: month, To: now.Truncate(24*time.Hour).AddDate(0, 0, 1), TeamIDs: teamIDs, ChargedOnly: true})
	if err != nil {
		return nil, nil, err
	}
	spent := map[int64]int64{}
	for _, r := range spend {
		spent[r.Key] = r.AmountMicros
	}
	budgets, err := h.cost.BudgetStatuses(ctx, now, 7*24*time.Hour)
	if err != nil {
		return nil, nil, err
	}
	if d.Currency, err = h.cost.Currency(ctx); err != nil {
		return nil, nil, err
	}
	rows, free, err := h.quotas.Overview(ctx)
	if err != nil {
		return nil, nil, err
	}
	teams, err := h.store.Teams(ctx)
	if err != nil {
		return nil, nil, err
	}
	// A team that spent nothing may owe it to no rates being set: read them only then.
	rated := true
	for _, id := range teamIDs {
		if spent[id] == 0 {
			none, err := h.noRates(ctx)
			if err != nil {
				return nil, nil, err
			}
			rated = !none
			break
		}
	}
	for _, t := range teams {
		if !slices.Contains(teamIDs, t.ID) {
			continue
		}
		ht := templates.HomeTeam{Name: t.Name, Spent: accounting.FormatMoney(spent[t.ID]), NoRates: !rated && spent[t.ID] == 0}
		for _, b := range budgets {
			if b.Budget.TeamID != nil && *b.Budget.TeamID == t.ID {
				ht.Budget = accounting.FormatMoney(b.Budget.AmountMicros)
				ht.Forecast = accounting.FormatMoney(b.Forecast)
				ht.Over = b.Forecast > b.Budget.AmountMicros
			}
		}
		for _, q := range rows {
			if q.TeamID == t.ID {
				ht.Quotas = append(ht.Quotas, homeQuota(q.GPUModel, q.NominalMilli, q.UseMilli))
			}
		}
		for _, u := range free {
			if u.Team == t.Name {
				ht.Quotas = append(ht.Quotas, homeQuota(u.GPUModel, -1, u.UseMilli))
			}
		}
		d.Teams = append(d.Teams, ht)
	}
	return teamIDs, projectIDs, nil
}

// homeQuota words a quota and its use; nominal -1 is use that no quota limits.
func homeQuota(model string, nominal, use int64) templates.HomeQuota {
	q := templates.HomeQuota{Model: model, Nominal: gpusOf(nominal), InUse: gpusOf(use), Borrowing: nominal >= 0 && use > nominal}
	if q.Model == "" {
		q.Model = "any model"
	}
	switch {
	case nominal < 0:
		q.Nominal, q.Percent = "no quota (unlimited)", -1
	case nominal > 0:
		q.Percent = int(min(100, use*100/nominal))
	}
	return q
}

// homeAlerts fills in the firing alerts about the user's teams, projects and jobs, and
// their unread messages.
func (h *Handler) homeAlerts(ctx context.Context, userID int64, teams, projects, jobs []int64, d *templates.HomeData) error {
	for scope, ids := range map[string][]int64{governance.ScopeTeam: teams, governance.ScopeProject: projects, governance.ScopeJob: jobs} {
		if len(ids) == 0 {
			continue
		}
		alerts, err := h.store.Alerts(ctx, store.AlertFilter{States: []string{governance.StateFiring}, Scope: scope, ScopeIDs: ids, Limit: 10})
		if err != nil {
			return err
		}
		for _, a := range alerts {
			var ev map[string]any
			json.Unmarshal([]byte(a.Evidence), &ev)
			summary, _ := ev["summary"].(string)
			d.Alerts = append(d.Alerts, templates.HomeAlert{Title: "Alert on a " + scope, Body: summary, When: a.FiredAt.UTC().Format(pageTime)})
		}
	}
	slices.SortFunc(d.Alerts, func(a, b templates.HomeAlert) int { return strings.Compare(b.When, a.When) })
	ns, err := h.store.NotificationsOfUser(ctx, userID, 20)
	if err != nil {
		return err
	}
	for _, n := range ns {
		if n.ReadAt == nil && len(d.Notifications) < 5 {
			d.Notifications = append(d.Notifications, templates.HomeAlert{Title: n.Title, Body: n.Body, Link: n.Link, When: n.CreatedAt.UTC().Format(pageTime)})
		}
	}
	return nil
}

// ago says how long ago t was, roughly: "5m ago", "3h ago", "2d ago".
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return shortDuration(d.Truncate(time.Minute)) + " ago"
	case d < 48*time.Hour:
		return shortDuration(d.Truncate(time.Hour)) + " ago"
	}
	return strings.TrimSuffix(d.Truncate(24*time.Hour).String(), "0m0s") + " ago"
}
