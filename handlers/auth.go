package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/templates"
)

// Gin context keys set by the web gate before a handler runs.
const (
	PrincipalKey  = "gantry.principal"  // *identity.Principal of a signed-in caller
	PermissionKey = "gantry.permission" // authz.Permission in the route's domain
	ProjectKey    = "gantry.project"    // *models.Project of a project route
	JobKey        = "gantry.job"        // *models.Job named by :id, on a route whose project is the job's
	FormCutKey    = "gantry.form_cut"   // FormCut of a form the gate read only as far as the body bound
)

// Cookies Gantry sets. All are HttpOnly and SameSite=Lax, and Secure when served over TLS.
const (
	SessionCookie   = "gantry_session" // the session id; the database keeps its hash
	LoginCSRFCookie = "gantry_login"   // the login form's double-submit token, before there is a session
	OIDCCookie      = "gantry_oidc"    // the signed state of a single sign-on in progress
)

// principal returns the signed-in caller; the gate guarantees one on non-public routes.
func principal(c *gin.Context) *identity.Principal {
	p, _ := c.Get(PrincipalKey)
	pr, _ := p.(*identity.Principal)
	return pr
}

// permission returns what the caller may do in the route's domain.
func permission(c *gin.Context) authz.Permission {
	p, _ := c.Get(PermissionKey)
	perm, _ := p.(authz.Permission)
	return perm
}

// routeProject returns the project a project route is about.
func routeProject(c *gin.Context) *models.Project {
	p, _ := c.Get(ProjectKey)
	pr, _ := p.(*models.Project)
	return pr
}

// routeJob returns the job the gate loaded to find a job route's project, or nil
// where it loaded none.
func routeJob(c *gin.Context) *models.Job {
	j, _ := c.Get(JobKey)
	job, _ := j.(*models.Job)
	return job
}

// csrfToken is the token state-changing forms of this request must carry.
func csrfToken(c *gin.Context) string {
	if p := principal(c); p != nil && p.Session != nil {
		return p.Session.CSRFToken
	}
	return ""
}

// SetCookie sets (maxAge > 0), or deletes (maxAge < 0), one of Gantry's cookies.
func (h *Handler) SetCookie(c *gin.Context, name, value string, maxAge int) {
	http.SetCookie(c.Writer, &http.Cookie{
		Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.secureCookies || c.Request.TLS != nil,
	})
}

// Refusal is a request that may not proceed. The API answers Code, Message and Field;
// a page says Heading over Page, else words for the status over Message made a sentence,
// and links to NextHref in the words NextText, where that is set.
type Refusal struct {
	Status               int
	Code, Message, Field string
	Heading, Page        string
	NextHref, NextText   string
}

// Refuse answers r: JSON for the API, a page for browsers.
func (h *Handler) Refuse(c *gin.Context, r Refusal) {
	if isAPI(c) {
		jsonError(c, r.Status, r.Code, r.Message, r.Field)
		return
	}
	heading, text := r.Heading, r.Page
	if heading == "" {
		heading = statusHeading(r.Status)
	}
	if text == "" {
		text = Sentence(r.Message)
	}
	c.Abort()
	render(c, r.Status, templates.ErrorPage(h.page(c, heading, ""), templates.ErrorData{Status: r.Status, Heading: heading, Message: text,
		Next: templates.Link{Href: r.NextHref, Text: r.NextText}}))
}

// statusHeading names a refusal's status for a page.
func statusHeading(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "Not understood"
	case http.StatusUnauthorized:
		return "Sign in first"
	case http.StatusForbidden:
		return "Not allowed"
	case http.StatusNotFound:
		return "Not found"
	case http.StatusInternalServerError:
		return "Something went wrong"
	}
	return http.StatusText(status)
}
