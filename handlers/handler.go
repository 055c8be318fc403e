// Package handlers holds Gantry's gin handlers, one small file per action: parse the
// request, validate, call a service, render a templ page or JSON.
package handlers

import (
	"log/slog"
	"net/http"

	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/classes"
	"github.com/gantry-gpu/gantry/services/directory"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/feedback"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/images"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/quotas"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// Handler carries what the handlers need; the router binds its methods to routes.
type Handler struct {
	store    *store.Store
	version  string
	log      *slog.Logger
	dispatch *dispatch.Service
	jobs     *jobs.Service
	preview  *jobs.Previewer
	identity *identity.Service
	authz    *authz.Authorizer
	audit    *audit.Log
	metrics  http.Handler
	images   *images.Service
	feedback *feedback.Service
	dir      *directory.Service
	// telemetry reads GPU history, job metrics and hints for the job pages.
	telemetry *telemetry.Service
	quotas    *quotas.Service
	classes   *classes.Service
	cost      *accounting.Accounting
	gov       *governance.Service
	// secureCookies marks cookies Secure even on plain HTTP: Gantry sits behind a TLS proxy.
	secureCookies bool
}

// Services are the capabilities the handlers call, beyond the store. Add a field
// per capability rather than a parameter to New.
type Services struct {
	Dispatch *dispatch.Service
	Jobs     *jobs.Service
	// Preview tells the submit form what a job would cost and whether it would start.
	Preview  *jobs.Previewer
	Identity *identity.Service
	Authz    *authz.Authorizer
	Audit    *audit.Log
	// Metrics answers Prometheus scrapes (services/telemetry/exporter).
	Metrics  http.Handler
	Images   *images.Service
	Feedback *feedback.Service
	// Directory changes teams, projects, people and group mappings.
	Directory *directory.Service
	// Telemetry reads GPU history, job metrics and bottleneck hints.
	Telemetry *telemetry.Service
	// Quotas keeps the teams' quotas.
	Quotas *quotas.Service
	// Classes keeps the priority classes.
	Classes *classes.Service
	// Accounting and Governance serve the cost, budget, rule and alert pages.
	Accounting *accounting.Accounting
	Governance *governance.Service
	// SecureCookies marks cookies Secure on plain HTTP too, for a TLS-terminating proxy in front.
	SecureCookies bool
}

// New returns the handlers over st and svc; version is shown in the footer.
func New(st *store.Store, version string, log *slog.Logger, svc Services) *Handler {
	return &Handler{
		store:         st,
		version:       version,
		log:           log,
		dispatch:      svc.Dispatch,
		jobs:          svc.Jobs,
		preview:       svc.Preview,
		identity:      svc.Identity,
		authz:         svc.Authz,
		audit:         svc.Audit,
		metrics:       svc.Metrics,
		images:        svc.Images,
		feedback:      svc.Feedback,
		dir:           svc.Directory,
		quotas:        svc.Quotas,
		classes:       svc.Classes,
		telemetry:     svc.Telemetry,
		cost:          svc.Accounting,
		gov:           svc.Governance,
		secureCookies: svc.SecureCookies,
	}
}
