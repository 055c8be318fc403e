package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/directory"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// changesShown is how many audit events an admin page's "recent changes" shows.
const changesShown = 10

// recentChanges reads the newest audit events matching f for a page's "recent changes",
// as the audit log shows them (secret values masked).
func (h *Handler) recentChanges(ctx context.Context, f store.AuditFilter) ([]templates.ChangeRow, error) {
	page, err := h.audit.Events(ctx, f, 0, changesShown)
	if err != nil {
		return nil, err
	}
	out := make([]templates.ChangeRow, len(page.Events))
	for i, e := range page.Events {
		out[i] = templates.ChangeRow{At: e.At.UTC().Format(time.DateTime), Actor: e.Actor, Action: e.Action,
			Object: e.ObjectType + " " + e.ObjectID, Detail: e.Detail}
	}
	return out, nil
}

// The console's lists, which the page of something missing links to.
var (
	nodesLink    = templates.Link{Href: "/admin/nodes", Text: "See every node on the nodes page"}
	poolsLink    = templates.Link{Href: "/admin/pools", Text: "The pools page lists every pool"}
	classesLink  = templates.Link{Href: "/admin/priority-classes", Text: "The priority classes page lists them all"}
	budgetsLink  = templates.Link{Href: "/admin/cost/budgets", Text: "See them all on the budgets page"}
	channelsLink = templates.Link{Href: "/admin/cost/channels", Text: "See them all on the channels page"}
	rulesLink    = templates.Link{Href: "/admin/cost/rules", Text: "See them all on the rules page"}
	quotasLink   = templates.Link{Href: "/admin/quotas", Text: "The quotas page lists them all"}
)

// confirmed reports whether a destructive form was confirmed; if not, it answers with a
// page that asks, posting the same fields again with confirm=yes.
func (h *Handler) confirmed(c *gin.Context, d templates.ConfirmData, fields ...string) bool {
	if c.PostForm("confirm") == "yes" {
		return true
	}
	d.Action = c.Request.URL.Path
	for _, f := range fields {
		d.Fields = append(d.Fields, templates.HiddenField{Name: f, Value: c.PostForm(f)})
	}
	section := d.Section
	if section == "" {
		section = "admin"
	}
	render(c, http.StatusOK, templates.Confirm(h.page(c, d.Heading, section), d))
	return false
}

// canAdmin reports whether the caller may change what the console shows (auditors only look).
func canAdmin(c *gin.Context) bool { return permission(c).CanWrite(authz.Platform) }

// redirectNotice sends the browser to path (which may have a query) with a notice to
// show there.
func redirectNotice(c *gin.Context, path, notice string) {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	c.Redirect(http.StatusSeeOther, path+sep+"notice="+url.QueryEscape(notice))
}

// boolField reads a form field that must be true or false, or answers 400.
func (h *Handler) boolField(c *gin.Context, name string) (bool, bool) {
	switch c.PostForm(name) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	h.errorPage(c, http.StatusBadRequest, "Bad request", capitalize(name)+" must be true or false.")
	return false, false
}

// adminFailed answers a console action's error: a missing object is 404, other bad input
// 400 with what is wrong, through invalid where the form is shown again, else on an error
// page; it reports whether there was an error.
func (h *Handler) adminFailed(c *gin.Context, err error, invalid func(*models.FieldError)) bool {
	var nf *directory.NotFoundError
	if errors.As(err, &nf) {
		h.errorPage(c, http.StatusNotFound, "No such "+nf.Kind, capitalize(nf.Error())+". It may have been removed since the page you came from was drawn: go back and reload it.")
		return true
	}
	if invalid == nil {
		invalid = func(fe *models.FieldError) { h.errorPage(c, http.StatusBadRequest, "Bad request", fieldMessage(fe)) }
	}
	return h.failed(c, err, invalid)
}

// backTo is where an action taken on a console list goes back to: the list's page as
// the form's "back" field names it (with the filter and page it was taken on), else
// page itself. Nothing but a link to page is taken from the field.
func backTo(c *gin.Context, page string) string {
	u, err := url.Parse(c.PostForm("back"))
	if err != nil || u.Path != page || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return page
	}
	return u.RequestURI()
}
