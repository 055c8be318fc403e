package handlers

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/templates"
)

// costView is what one cost request asks for and may see.
type costView struct {
	filter templates.CostFilter
	query  accounting.Query
	all    bool     // admins and auditors see every team, unallocated capacity included
	names  []string // the projects a member sees, for the page's heading
}

// none reports whether the user may see no cost at all (an empty project filter would
// otherwise select everything).
func (v costView) none() bool { return !v.all && len(v.query.ProjectIDs) == 0 }

// costRequest reads the filters of a cost page or export (defaults: by team, per day,
// this month so far, every resource) and limits it to what the user may see: every
// team for a platform-wide cost reader, otherwise the projects where they read cost
// and, for a team lead, every project of their team.
// A bad filter comes back as a FieldError from the query's validation.
func (h *Handler) costRequest(c *gin.Context, user *models.User, now time.Time) (costView, error) {
	f := templates.CostFilter{By: c.DefaultQuery("by", "team"), Bucket: c.DefaultQuery("bucket", "day"),
		From: c.DefaultQuery("from", now.Format("2006-01")+"-01"), To: c.DefaultQuery("to", now.Format(time.DateOnly)), Resource: c.Query("resource")}
	v := costView{filter: f, query: accounting.Query{By: f.By, Bucket: f.Bucket}}
	if f.Resource != "" {
		v.query.Resources = []string{f.Resource}
	}
	ctx := c.Request.Context()
	viewer, err := h.costViewer(ctx, user)
	if err != nil {
		return v, err
	}
	v.all = viewer.all
	if !v.all {
		v.query.ChargedOnly = true
		if v.query.ProjectIDs, v.names, err = h.costProjects(ctx, viewer); err != nil {
			return v, err
		}
	}
	if v.query.From, err = time.Parse(time.DateOnly, f.From); err != nil {
		return v, models.Invalid("from", "%q is not a day (YYYY-MM-DD)", f.From)
	}
	last, err := time.Parse(time.DateOnly, f.To)
	if err != nil {
		return v, models.Invalid("to", "%q is not a day (YYYY-MM-DD)", f.To)
	}
	v.query.To = last.AddDate(0, 0, 1)
	return v, nil
}

// costRows reads the filters of a cost view and sums the ledger for what the user may
// see of it: no rows where that is nothing.
func (h *Handler) costRows(c *gin.Context, user *models.User) (costView, []accounting.Row, error) {
	v, err := h.costRequest(c, user, time.Now().UTC())
	var rows []accounting.Row
	if err == nil && !v.none() {
		rows, err = h.cost.Rollup(c.Request.Context(), v.query)
	}
	return v, rows, err
}

// costProjects lists the projects whose cost v sees, with their names sorted.
func (h *Handler) costProjects(ctx context.Context, v costViewer) ([]int64, []string, error) {
	ids := v.projectIDs()
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		p, err := h.store.ProjectByID(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return ids, names, nil
}

// costParams is the query string of a view, for its CSV link.
func costParams(f templates.CostFilter) string {
	q := url.Values{"by": {f.By}, "bucket": {f.Bucket}, "from": {f.From}, "to": {f.To}}
	if f.Resource != "" {
		q.Set("resource", f.Resource)
	}
	return q.Encode()
}

func costScope(v costView) string {
	if v.all {
		return "Every team's spend, and the cost of GPUs no job held (unallocated)."
	}
	if len(v.names) == 0 {
		return "You are in no project, so there is no spend to show you."
	}
	return "Spend of your projects: " + strings.Join(v.names, ", ") + "."
}
