package handlers

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/templates"
)

// auditPageSize is how many events one page of the audit page shows.
const auditPageSize = 50

// AuditIndex shows the audit log, newest first, filtered by actor, action, project and time,
// a page at a time (?before= continues from an event id).
func (h *Handler) AuditIndex(c *gin.Context) {
	ctx := c.Request.Context()
	q := auditQuery(c)
	d := templates.AuditData{Filter: templates.AuditFilter(q)}
	f, err := h.audit.Filter(ctx, q)
	if h.failed(c, err, func(fe *models.FieldError) {
		d.Error, d.Field = fieldMessage(fe), fe.Field
		render(c, http.StatusBadRequest, templates.Audit(h.page(c, "Audit log", ""), d))
	}) {
		return
	}
	before, err := strconv.ParseInt(c.DefaultQuery("before", "0"), 10, 64)
	if err != nil || before < 0 {
		d.Error, d.Field = "Before: an event id is a positive number.", "before"
		render(c, http.StatusBadRequest, templates.Audit(h.page(c, "Audit log", ""), d))
		return
	}
	page, err := h.audit.Events(ctx, f, before, auditPageSize)
	if err != nil {
		h.serverError(c, err)
		return
	}
	projects, err := h.store.Projects(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	names := map[int64]string{}
	for _, p := range projects {
		names[p.ID] = p.Name
	}
	for _, e := range page.Events {
		row := templates.AuditRow{ID: e.ID, At: e.At.UTC().Format("2006-01-02 15:04:05"), Actor: e.Actor, ActorType: e.ActorType,
			Action: e.Action, SourceIP: e.SourceIP, RequestID: e.RequestID, Detail: e.Detail, Hash: e.Hash}
		if e.ObjectType != "" {
			row.Object = e.ObjectType + " " + e.ObjectID
		}
		if e.ProjectID != nil {
			row.Project = names[*e.ProjectID]
		}
		d.Events = append(d.Events, row)
	}
	head, ok, err := h.audit.Head(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	if ok {
		d.Head = head.String()
	}
	values := auditValues(q)
	d.Export = "/admin/audit/export?" + values.Encode()
	if page.Next != 0 {
		values.Set("before", strconv.FormatInt(page.Next, 10))
		d.Older = "/admin/audit?" + values.Encode()
	}
	render(c, http.StatusOK, templates.Audit(h.page(c, "Audit log", ""), d))
}

// AuditExport downloads the events of the filter as JSON Lines, oldest first, for a SIEM.
// The export itself is audited: who took a copy of the log, and of what.
func (h *Handler) AuditExport(c *gin.Context) {
	ctx := c.Request.Context()
	q := auditQuery(c)
	f, err := h.audit.Filter(ctx, q)
	if h.failed(c, err, func(fe *models.FieldError) {
		h.errorPage(c, http.StatusBadRequest, "Bad filter", fieldMessage(fe))
	}) {
		return
	}
	if err := h.audit.Append(ctx, audit.Entry{Action: "audit.exported", ObjectType: "audit", Detail: auditValues(q)}); err != nil {
		h.serverError(c, err)
		return
	}
	c.Header("Content-Type", "application/x-ndjson")
	c.Header("Content-Disposition", fmt.Sprintf(`attachment; filename="gantry-audit-%s.jsonl"`, time.Now().UTC().Format("20060102-150405")))
	c.Status(http.StatusOK)
	if _, err := h.audit.Export(ctx, c.Writer, f); err != nil {
		// The status is sent already: all that is left is to log it.
		h.log.Error("audit export", "request_id", c.GetString(RequestIDKey), "err", err)
	}
}

func auditQuery(c *gin.Context) audit.Query {
	return audit.Query{Actor: c.Query("actor"), Action: c.Query("action"), Project: c.Query("project"), Since: c.Query("since"), Until: c.Query("until")}
}

// auditValues is the filter as query parameters, the empty ones left out.
func auditValues(q audit.Query) url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"actor": q.Actor, "action": q.Action, "project": q.Project, "since": q.Since, "until": q.Until} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}
