package handlers

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/feedback"
	"github.com/gantry-gpu/gantry/templates"
)

// RequestIDKey is the gin context key of the request id set by the web middleware.
const RequestIDKey = "request_id"

// APIError is the body of every JSON error: {"error": {"code", "message", "field"}}.
type APIError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func (h *Handler) page(c *gin.Context, title, section string) templates.Page {
	p := templates.Page{Title: title, Active: section, Version: h.version, CSRF: csrfToken(c)}
	if pr := principal(c); pr != nil {
		p.User = pr.User.Username
		p.Auditor = permission(c).CanRead(authz.Audit)
		p.Admin = permission(c).CanRead(authz.Platform)
		p.Feedback.Page = feedbackPage(c)
		p.Feedback.Job = jobOfPage(p.Feedback.Page)
		p.Feedback.Categories = feedback.Categories
	}
	return p
}

// render writes a templ component with the request's context. The page is drawn in
// full before anything is sent: one write with its length rather than a chunk per few
// KiB, and a component that fails answers 500 instead of half a page.
func render(c *gin.Context, status int, comp templ.Component) {
	buf := templ.GetBuffer()
	defer templ.ReleaseBuffer(buf)
	if err := comp.Render(c.Request.Context(), buf); err != nil {
		c.Error(err)
		c.String(http.StatusInternalServerError, "This page could not be drawn. Reload it; if that fails again, tell the platform team.")
		return
	}
	c.Header("Content-Length", strconv.Itoa(buf.Len()))
	c.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

// writeJSON answers with body, already encoded JSON, in one write with its length.
func writeJSON(c *gin.Context, status int, body []byte) {
	c.Header("Content-Length", strconv.Itoa(len(body)))
	c.Data(status, "application/json; charset=utf-8", body)
}

// jsonError answers an API request with a consistent error body.
func jsonError(c *gin.Context, status int, code, message, field string) {
	c.AbortWithStatusJSON(status, gin.H{"error": APIError{Code: code, Message: message, Field: field}})
}

// failed answers err and says whether there was one. Bad input, a *models.FieldError, is
// answered by invalid (the form shown again with its field marked, status 400) or, where
// invalid is nil, with the API's 400 naming the field; anything else is a 500.
func (h *Handler) failed(c *gin.Context, err error, invalid func(*models.FieldError)) bool {
	var fe *models.FieldError
	switch {
	case err == nil:
		return false
	case !errors.As(err, &fe):
		h.serverError(c, err)
	case invalid != nil:
		invalid(fe)
	default:
		jsonError(c, http.StatusBadRequest, "invalid", fe.Message, fe.Field)
	}
	return true
}

// fieldMessage says a field error as a sentence for a page: "State: … ."
func fieldMessage(fe *models.FieldError) string {
	return fieldLabel(fe.Field) + ": " + fe.Message + "."
}

// fieldLabel names a form field as a person would: "session_idle" is "Session idle",
// "cpu_lending_limit" "CPU lending limit".
func fieldLabel(field string) string {
	words := strings.FieldsFunc(field, func(r rune) bool { return r == '_' || r == '.' })
	for i, w := range words {
		if a, ok := fieldAcronyms[w]; ok {
			words[i] = a
		}
	}
	return capitalize(strings.Join(words, " "))
}

// fieldAcronyms are the words of field names written otherwise in a label.
var fieldAcronyms = map[string]string{"cpu": "CPU", "gpu": "GPU", "gpus": "GPUs", "id": "ID", "mib": "MiB", "mig": "MIG", "ram": "RAM", "url": "URL", "sso": "SSO", "oidc": "OIDC"}

// errorPage answers a browser with an error page that says what to do next.
func (h *Handler) errorPage(c *gin.Context, status int, heading, message string) {
	c.Abort()
	render(c, status, templates.ErrorPage(h.page(c, heading, ""), templates.ErrorData{Status: status, Heading: heading, Message: message}))
}

// missingPage answers 404: message says what is missing, and next links to the page
// that lists what there is, so that the reader goes there in one click.
func (h *Handler) missingPage(c *gin.Context, heading, message string, next templates.Link) {
	c.Abort()
	render(c, http.StatusNotFound, templates.ErrorPage(h.page(c, heading, ""), templates.ErrorData{Status: http.StatusNotFound, Heading: heading, Message: message, Next: next}))
}

// deny refuses with 403 a request that the gate let through but a finer check of the
// handler does not (an alert of a team the user does not lead, say), and audits it as
// access.denied, as the gate does its own refusals.
func (h *Handler) deny(c *gin.Context, heading, message string) {
	h.auditDenied(c, http.StatusForbidden, message)
	if isAPI(c) {
		jsonError(c, http.StatusForbidden, "forbidden", message, "")
		return
	}
	h.errorPage(c, http.StatusForbidden, heading, message)
}

// conceal refuses a change to something that exists but that the caller may not see:
// notFound answers it exactly as if it did not exist, so that nobody learns what others
// have, and the refusal is audited as access.denied with the true reason, which only
// admins and auditors read.
func (h *Handler) conceal(c *gin.Context, reason string, notFound func()) {
	if c.Request.Method != http.MethodGet && c.Request.Method != http.MethodHead {
		h.auditDenied(c, http.StatusNotFound, reason)
	}
	notFound()
}

// auditDenied records a refusal of the request with the status it was answered with.
func (h *Handler) auditDenied(c *gin.Context, status int, reason string) {
	err := h.audit.Append(c.Request.Context(), audit.Entry{
		Action: "access.denied", ObjectType: "route", ObjectID: c.Request.Method + " " + c.Request.URL.Path,
		Detail: map[string]any{"status": status, "reason": reason},
	})
	if err != nil {
		h.log.Error("audit a refusal", slog.String("request_id", c.GetString(RequestIDKey)), slog.Any("err", err))
	}
}

// serverError logs err with the request id and answers without leaking details.
func (h *Handler) serverError(c *gin.Context, err error) {
	rid := c.GetString(RequestIDKey)
	h.log.Error("request failed", slog.String("request_id", rid), slog.String("path", c.Request.URL.Path), slog.Any("err", err))
	msg := "Something went wrong on our side. Try again; if it persists, tell the platform team request id " + rid + "."
	if isAPI(c) {
		jsonError(c, http.StatusInternalServerError, "internal", msg, "")
		return
	}
	h.errorPage(c, http.StatusInternalServerError, "Something went wrong", msg)
}

func isAPI(c *gin.Context) bool { return strings.HasPrefix(c.Request.URL.Path, "/api/") }

// NotFound answers unknown routes: JSON for the API, a page for browsers.
func (h *Handler) NotFound(c *gin.Context) {
	if isAPI(c) {
		jsonError(c, http.StatusNotFound, "not_found", "There is no endpoint "+c.Request.Method+" "+c.Request.URL.Path+". GET /api/v1/openapi.json lists them all.", "")
		return
	}
	h.errorPage(c, http.StatusNotFound, "Page not found", "There is no page at "+c.Request.URL.Path+". Use the navigation above to find your way.")
}
