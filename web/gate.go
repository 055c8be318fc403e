package web

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/strictjson"
)

// maxBody bounds every request body but the agent protocol's (whose handlers bound their own).
const maxBody = 1 << 20

// gate enforces a route's Access before its handler runs: it authenticates the caller
// (session cookie, or Bearer token on /api), checks CSRF on state-changing requests made
// with a session, finds the project, computes the caller's Permission once and asks it.
// Every refusal is answered with a clear message and audited.
type gate struct {
	h        *handlers.Handler
	identity *identity.Service
	authz    *authz.Authorizer
	audit    *audit.Log
	store    *store.Store
	log      *slog.Logger
	// metricsToken is the SHA-256 of the token a scrape must carry; nil: scrapes are public.
	metricsToken []byte
}

// refusal is a request turned away: status, code and a message the caller can act on;
// or, for a page that needs a signed-in user, a redirect to the login page.
type refusal struct {
	status  int
	code    string
	message string // for the API: a sentence, or with field what follows "field: "
	field   string // the request part at fault, for API error bodies
	// heading and page are what a page says, where its status's words and the message
	// would not say what to do next.
	heading, page string
	// nextHref and nextText link the page to where the reader finds what they looked for.
	nextHref, nextText string
	project            *int64
	location           string
	htmx               bool // location is for htmx to open (HX-Redirect), not a redirect to follow
	unaudited          bool // bad input that denies no access: not recorded as access.denied
}

func (g *gate) check(rule Access) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx := audit.WithActor(c.Request.Context(), audit.Actor{
			Name: "anonymous", Type: models.ActorUser, IP: c.ClientIP(), RequestID: c.GetString(handlers.RequestIDKey),
		})
		c.Request = c.Request.WithContext(ctx)
		switch rule.kind {
		case agent:
			// The handler authenticates the node (handlers.Agent) or its join token.
			c.Next()
			return
		case jobToken:
			// The handler authenticates the job (handlers.Job) and audits refusals.
			c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxBody)
			c.Next()
			return
		case scrape:
			if r := g.checkScrape(c); r != nil {
				c.Header("WWW-Authenticate", `Bearer realm="gantry metrics"`)
				g.refuse(c, *r)
				return
			}
			c.Next()
			return
		}
		if rule.kind == noRule {
			g.log.Error("route without an access rule", slog.String("method", c.Request.Method), slog.String("route", c.FullPath()))
			g.refuse(c, refusal{status: http.StatusForbidden, code: "forbidden", message: "Gantry refuses this address: it has no access rule. Tell a Gantry admin; it is a bug."})
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxBody)
		if rule.formCut {
			if r := cutForm(c); r != nil {
				g.refuse(c, *r)
				return
			}
		}
		if r := g.admit(c, rule); r != nil {
			g.refuse(c, *r)
			return
		}
		c.Next()
	}
}

// signedInIfAny stands before the page of an address no route has: no rule's check ran,
// so it reads the caller's session, if there is one, for the 404 page to show their menu
// and their sections as every other page does. It refuses nothing: a missing or ended
// session gets the same 404. Only pages: the API's 404 names no one.
func (g *gate) signedInIfAny(c *gin.Context) {
	if isAPIPath(c) || !safeMethod(c.Request.Method) {
		c.Next()
		return
	}
	ctx := audit.WithActor(c.Request.Context(), audit.Actor{
		Name: "anonymous", Type: models.ActorUser, IP: c.ClientIP(), RequestID: c.GetString(handlers.RequestIDKey),
	})
	c.Request = c.Request.WithContext(ctx)
	if p, r := g.authenticate(c, true); r == nil && p != nil {
		if perm, err := g.authz.Global(c.Request.Context(), p.User.ID); err == nil {
			c.Set(handlers.PermissionKey, perm)
		}
	}
	c.Next()
}

// admit runs the checks of rule and returns the first refusal, or nil.
func (g *gate) admit(c *gin.Context, rule Access) *refusal {
	p, r := g.authenticate(c, rule.kind == public)
	if r != nil {
		return r
	}
	if p == nil && rule.kind != public {
		return g.signInFirst(c)
	}
	if r := g.checkCSRF(c, p); r != nil {
		return r
	}
	// After CSRF, which has read the form; before anything is looked up by what was sent.
	if r := textFault(c); r != nil {
		return r
	}
	if rule.kind == public {
		return nil
	}
	if p.ReadOnly() && !safeMethod(c.Request.Method) {
		return &refusal{status: http.StatusForbidden, code: "forbidden", message: "This API token is read-only. To change things, create a token with scope write."}
	}
	ctx := c.Request.Context()
	var perm authz.Permission
	var err error
	var projectName string
	switch rule.kind {
	case signedIn, platform:
		perm, err = g.authz.Global(ctx, p.User.ID)
	case project:
		proj, r := g.project(c, rule.project)
		if r != nil {
			return r
		}
		c.Set(handlers.ProjectKey, proj)
		projectName = proj.Name
		perm, err = g.authz.InProject(ctx, p.User.ID, proj.ID)
	}
	if err != nil {
		g.log.Error("authorize", slog.String("request_id", c.GetString(handlers.RequestIDKey)), slog.Any("err", err))
		return &refusal{status: http.StatusInternalServerError, code: "internal", message: "Gantry could not check your permissions. Try again in a moment."}
	}
	if p.ReadOnly() {
		perm = perm.ReadOnly()
	}
	c.Set(handlers.PermissionKey, perm)
	if rule.kind != signedIn && !perm.Can(rule.object, rule.action) {
		var pid *int64
		if perm.ProjectID != 0 {
			pid = &perm.ProjectID
		}
		return &refusal{status: http.StatusForbidden, code: "forbidden", heading: "Not allowed", message: denial(rule, perm, projectName), project: pid}
	}
	return nil
}

// denial says, in the portal's words, what the caller may not do, what they have, and
// whom to ask for what.
func denial(rule Access, perm authz.Permission, projectName string) string {
	if rule.kind != project {
		switch {
		case rule.object == authz.Audit:
			return "You may not read the audit log: it is open to Gantry's admins and auditors. Ask an admin for the auditor role if you need it."
		case rule.action == authz.Read:
			return "You may not open the admin console: it is open to Gantry's admins and auditors. Ask an admin if you need something there."
		}
		return "You may not change this: only Gantry's admins manage people, teams, nodes, images, quotas and settings. Ask an admin to make the change."
	}
	have := "you have no role in it"
	if len(perm.Roles) > 0 {
		have = "your role there is " + strings.Join(perm.Roles, ", ")
	}
	ask := "Ask a Gantry admin."
	if role := authz.ProjectRoleFor(rule.object, rule.action); role != "" {
		ask = fmt.Sprintf("Ask a team lead of project %s or a Gantry admin for the %s role.", projectName, role)
	}
	return fmt.Sprintf("You may not %s: %s. %s", projectDoing(rule.object, rule.action, projectName), have, ask)
}

// projectDoing names what a project rule allows, e.g. "see the jobs of project vision".
func projectDoing(obj authz.Object, act authz.Action, name string) string {
	switch {
	case obj == authz.Jobs && act == authz.Read:
		return "see the jobs of project " + name
	case obj == authz.Jobs:
		return "submit or change jobs in project " + name
	case obj == authz.Project && act == authz.Read:
		return "see project " + name
	case obj == authz.Project && act == authz.Manage:
		return "manage the members of project " + name
	case obj == authz.Cost && act == authz.Read:
		return "see the cost of project " + name
	}
	return "do this in project " + name
}

// checkScrape refuses a scrape without the metrics token, when the server has one.
// Digests are compared so that the comparison takes the same time whatever the length.
func (g *gate) checkScrape(c *gin.Context) *refusal {
	if g.metricsToken == nil {
		return nil
	}
	sent, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	sum := sha256.Sum256([]byte(strings.TrimSpace(sent)))
	if !ok || subtle.ConstantTimeCompare(sum[:], g.metricsToken) != 1 {
		return &refusal{status: http.StatusUnauthorized, code: "unauthorized",
			message: "This Gantry's metrics need its metrics token: scrape with Authorization: Bearer <token> (serve's --metrics-token)."}
	}
	return nil
}

// signInAgain says why a credential did not sign the request in, as a sentence, and
// what to do next: a new API token for a token, a new sign-in for a session.
func signInAgain(err error, token bool) string {
	msg := handlers.Sentence(err.Error())
	if token {
		return msg + " Create a new API token on your API tokens page (/tokens) and use it (gantry login --server URL takes it)."
	}
	return msg + " Sign in again at /login."
}

// authenticate finds the caller: a Bearer token on /api, else the session cookie. A
// credential that does not hold is refused, except on public routes, where the caller just
// counts as anonymous (the login page must open for a browser with an ended session).
func (g *gate) authenticate(c *gin.Context, public bool) (*identity.Principal, *refusal) {
	ctx := c.Request.Context()
	var p *identity.Principal
	var err error
	header := c.GetHeader("Authorization")
	cookie, _ := c.Cookie(handlers.SessionCookie)
	switch {
	case isAPIPath(c) && header != "":
		token, ok := strings.CutPrefix(header, "Bearer ")
		if !ok {
			return nil, &refusal{status: http.StatusUnauthorized, code: "unauthorized", message: "The Authorization header must be Bearer <API token>."}
		}
		p, err = g.identity.Token(ctx, strings.TrimSpace(token))
	case cookie != "":
		p, err = g.identity.Session(ctx, cookie)
		if err != nil {
			g.h.SetCookie(c, handlers.SessionCookie, "", -1)
		}
	default:
		return nil, nil
	}
	switch {
	case errors.Is(err, identity.ErrUnauthenticated) && public:
		return nil, nil
	case errors.Is(err, identity.ErrUnauthenticated):
		if safeMethod(c.Request.Method) && !isAPIPath(c) && cookie != "" {
			// An ended session on a page: audit it, then send the browser to sign in again.
			g.audited(c, refusal{status: http.StatusUnauthorized, code: "unauthorized", message: err.Error()})
			return nil, g.signInFirst(c)
		}
		return nil, &refusal{status: http.StatusUnauthorized, code: "unauthorized", message: signInAgain(err, header != "" && isAPIPath(c))}
	case err != nil:
		g.log.Error("authenticate", slog.String("request_id", c.GetString(handlers.RequestIDKey)), slog.Any("err", err))
		return nil, &refusal{status: http.StatusInternalServerError, code: "internal", message: "Gantry could not check your credentials. Try again in a moment."}
	}
	c.Set(handlers.PrincipalKey, p)
	c.Set(handlers.UserKey, p.User)
	ctx = authz.WithVersion(ctx, p.PolicyVersion)
	c.Request = c.Request.WithContext(audit.WithActor(ctx, p.Actor(c.ClientIP(), c.GetString(handlers.RequestIDKey))))
	return p, nil
}

// checkCSRF refuses a state-changing request made with a browser session unless it carries
// the session's CSRF token (form field csrf_token, or header X-CSRF-Token: the only way
// on the API, whose bodies are not forms); without a session,
// the login form's double-submit cookie must match. API tokens need none: no browser sends them.
func (g *gate) checkCSRF(c *gin.Context, p *identity.Principal) *refusal {
	if safeMethod(c.Request.Method) || (p != nil && p.Token != nil) {
		return nil
	}
	if r := parseForm(c); r != nil {
		return r
	}
	sent := c.GetHeader("X-CSRF-Token")
	if sent == "" && !isAPIPath(c) {
		sent = c.Request.PostFormValue("csrf_token")
	}
	want := ""
	if p != nil {
		want = p.Session.CSRFToken
	} else if cookie, err := c.Cookie(handlers.LoginCSRFCookie); err == nil {
		want = cookie
	}
	if want == "" || sent == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(want)) != 1 {
		return &refusal{status: http.StatusForbidden, code: "csrf", heading: "This form has expired",
			message: "This form's security token is missing or out of date. Reload the page and try again."}
	}
	return nil
}

// cutForm reads a url-encoded form that is larger than maxBody as far as maxBody: the
// fields whole within it become the request's form, and the field cut off there is named
// to the handler (handlers.FormCut). What lies beyond maxBody is never read. A smaller
// form is put back for parseForm; one whose cut is in a field's name, where nothing says
// which field is too long, is refused as parseForm refuses it.
func cutForm(c *gin.Context) *refusal {
	if ct, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type")); ct != "application/x-www-form-urlencoded" || c.Request.Body == nil {
		return nil
	}
	body, err := io.ReadAll(c.Request.Body)
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		c.Request.Body = io.NopCloser(bytes.NewReader(body))
		return nil
	case !errors.As(err, &tooBig):
		return &refusal{status: http.StatusBadRequest, code: "malformed", message: "The form could not be read: " + err.Error() + "."}
	}
	whole, last := []byte(nil), body
	if i := bytes.LastIndexByte(body, '&'); i >= 0 {
		whole, last = body[:i], body[i+1:]
	}
	key, _, ok := bytes.Cut(last, []byte("="))
	name, kerr := url.QueryUnescape(string(key))
	form, ferr := url.ParseQuery(string(whole))
	if !ok || kerr != nil || ferr != nil {
		return &refusal{status: http.StatusBadRequest, code: "too_large", message: fmt.Sprintf("The form is larger than %d KiB, the most Gantry takes.", maxBody>>10)}
	}
	c.Request.PostForm, c.Request.Form = form, url.Values{}
	for k, vs := range form {
		c.Request.Form[k] = vs
	}
	for k, vs := range c.Request.URL.Query() {
		c.Request.Form[k] = append(c.Request.Form[k], vs...)
	}
	c.Set(handlers.FormCutKey, handlers.FormCut{Field: name, Limit: maxBody})
	return nil
}

// parseForm reads a form body within maxBody, answering 400 for one too large or malformed.
// The API's bodies are JSON whatever their Content-Type says: `curl -d` labels one a form
// unless told otherwise, and reading it as a form would leave its handler an empty body.
func parseForm(c *gin.Context) *refusal {
	if isAPIPath(c) {
		return nil
	}
	ct, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type"))
	var err error
	switch ct {
	case "application/x-www-form-urlencoded":
		err = c.Request.ParseForm()
	case "multipart/form-data":
		err = c.Request.ParseMultipartForm(maxBody)
	default:
		return nil
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return &refusal{status: http.StatusBadRequest, code: "too_large", message: fmt.Sprintf("The form is larger than %d KiB, the most Gantry takes.", maxBody>>10)}
	case err != nil:
		return &refusal{status: http.StatusBadRequest, code: "malformed", message: "The form could not be read: " + err.Error() + "."}
	}
	return nil
}

// project finds the project a project route is about.
func (g *gate) project(c *gin.Context, from projectSource) (*models.Project, *refusal) {
	ctx := c.Request.Context()
	var name string
	switch from {
	case fromPath:
		name = c.Param("project")
	case fromBody:
		n, r := bodyProject(c)
		if r != nil {
			return nil, r
		}
		name = n
	case fromJob:
		id, err := strconv.ParseInt(c.Param("id"), 10, 64)
		if err != nil || id <= 0 {
			return nil, &refusal{status: http.StatusBadRequest, code: "invalid", message: "a job id is a positive integer", field: "id"}
		}
		j, p, err := g.store.JobAndProject(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, &refusal{status: http.StatusNotFound, code: "not_found", message: "there is no job " + c.Param("id"), field: "id",
				heading: "No such job", page: "There is no job " + c.Param("id") + ".", nextHref: "/jobs", nextText: "Find yours on the jobs list"}
		}
		if err != nil {
			return nil, g.internal(c, err)
		}
		// The handler reads the job from here rather than a second time.
		c.Set(handlers.JobKey, j)
		return p, nil
	}
	p, err := g.store.ProjectByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, &refusal{status: http.StatusNotFound, code: "not_found", message: fmt.Sprintf("there is no project %q", name), field: "project",
			heading: "No such project", page: fmt.Sprintf("There is no project %q.", name), nextHref: "/projects", nextText: "Your projects lists the ones you belong to"}
	}
	if err != nil {
		return nil, g.internal(c, err)
	}
	return p, nil
}

// bodyProject reads the "project" field of a JSON body or form and puts the body back.
func bodyProject(c *gin.Context) (string, *refusal) {
	if r := parseForm(c); r != nil {
		return "", r
	}
	if c.Request.PostForm != nil {
		if name := c.Request.PostFormValue("project"); name != "" {
			return name, nil
		}
		return "", &refusal{status: http.StatusBadRequest, code: "invalid", message: "the project field is missing: name the project", field: "project"}
	}
	body, err := io.ReadAll(c.Request.Body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return "", &refusal{status: http.StatusBadRequest, code: "too_large", message: fmt.Sprintf("the body is larger than %d KiB", maxBody>>10), field: "body"}
	}
	if err != nil {
		return "", &refusal{status: http.StatusBadRequest, code: "malformed", message: "the body could not be read: " + err.Error(), field: "body"}
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(body))
	var v struct {
		Project string `json:"project"`
	}
	// Said as the handlers say it: the field, and what it must be in JSON's words, not Go's.
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch err := json.Unmarshal(body, &v); {
	case len(bytes.TrimSpace(body)) == 0:
		return "", &refusal{status: http.StatusBadRequest, code: "malformed", message: `is empty: send a JSON object such as {"project": "…"}`, field: "body"}
	case errors.As(err, &te) && te.Field == "project":
		return "", &refusal{status: http.StatusBadRequest, code: "invalid", message: "must be a string, not " + te.Value, field: "project"}
	case errors.As(err, &te):
		return "", &refusal{status: http.StatusBadRequest, code: "malformed", message: "must be a JSON object, not " + te.Value, field: "body"}
	case errors.As(err, &se):
		return "", &refusal{status: http.StatusBadRequest, code: "malformed", message: fmt.Sprintf("is not valid JSON (at byte %d): %v", se.Offset, err), field: "body"}
	case err != nil:
		return "", &refusal{status: http.StatusBadRequest, code: "malformed", message: "is not valid JSON: " + err.Error(), field: "body"}
	}
	// encoding/json read {"Project": …} as the project, which the handler refuses: it
	// must not be authorised by it either. Bad input, as the text checks: not audited.
	var fe *models.FieldError
	if errors.As(strictjson.Check(body, &v), &fe) {
		return "", &refusal{status: http.StatusBadRequest, code: "invalid", message: fe.Message, field: fe.Field, unaudited: true}
	}
	if v.Project == "" {
		return "", &refusal{status: http.StatusBadRequest, code: "invalid", message: "the project field is missing: name the project", field: "project"}
	}
	return v.Project, nil
}

// signInFirst answers an anonymous request: 401 for the API and for forms, a redirect to
// the login page (and back afterwards) for a page. htmx would follow a redirect unseen
// and put the login page into the page that asked (a job page refreshing itself after
// its session ended): it is told to open the login page itself, and to come back to
// the page it is on.
func (g *gate) signInFirst(c *gin.Context) *refusal {
	if isAPIPath(c) || !safeMethod(c.Request.Method) {
		return &refusal{status: http.StatusUnauthorized, code: "unauthorized", message: "Sign in first, or send an API token as Authorization: Bearer <token>."}
	}
	if c.GetHeader("HX-Request") == "true" {
		next := c.Request.URL.RequestURI()
		// Only the path and query of the page: the login page refuses any other next.
		if u, err := url.Parse(c.GetHeader("HX-Current-URL")); err == nil && strings.HasPrefix(u.Path, "/") {
			next = u.RequestURI()
		}
		return &refusal{status: http.StatusUnauthorized, location: "/login?next=" + url.QueryEscape(next), htmx: true}
	}
	return &refusal{status: http.StatusSeeOther, location: "/login?next=" + url.QueryEscape(c.Request.URL.RequestURI())}
}

func (g *gate) internal(c *gin.Context, err error) *refusal {
	g.log.Error("gate", slog.String("request_id", c.GetString(handlers.RequestIDKey)), slog.Any("err", err))
	return &refusal{status: http.StatusInternalServerError, code: "internal", message: "Something went wrong on our side. Try again in a moment."}
}

// refuse answers r and audits it; sending a browser to the login page is not a refusal.
func (g *gate) refuse(c *gin.Context, r refusal) {
	if r.htmx {
		c.Header("HX-Redirect", r.location)
		c.AbortWithStatus(r.status)
		return
	}
	if r.location != "" {
		c.Redirect(r.status, r.location)
		c.Abort()
		return
	}
	if r.status != http.StatusInternalServerError && r.status != http.StatusNotFound && !r.unaudited {
		g.audited(c, r)
	}
	g.h.Refuse(c, handlers.Refusal{Status: r.status, Code: r.code, Message: r.message, Field: r.field, Heading: r.heading, Page: r.page, NextHref: r.nextHref, NextText: r.nextText})
}

// audited records a refusal; the request itself changes nothing.
func (g *gate) audited(c *gin.Context, r refusal) {
	err := g.audit.Append(c.Request.Context(), audit.Entry{
		Action: "access.denied", ObjectType: "route", ObjectID: c.Request.Method + " " + c.Request.URL.Path, ProjectID: r.project,
		Detail: map[string]any{"status": r.status, "reason": r.message},
	})
	if err != nil {
		g.log.Error("audit a refusal", slog.String("request_id", c.GetString(handlers.RequestIDKey)), slog.Any("err", err))
	}
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

func isAPIPath(c *gin.Context) bool { return strings.HasPrefix(c.Request.URL.Path, "/api/") }
