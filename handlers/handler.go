// Package handlers holds Gantry's gin handlers, one small file per action: parse the
// request, validate, call a service, render a templ page or JSON.
package handlers

import (
	"log/slog"

	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
)

// Handler carries what the handlers need; the router binds its methods to routes.
type Handler struct {
	store    *store.Store
	version  string
	log      *slog.Logger
	dispatch *dispatch.Service
	jobs     *jobs.Service
}

// Services are the capabilities the handlers call, beyond the store. Add a field
// per capability rather than a parameter to New.
type Services struct {
	Dispatch *dispatch.Service
	Jobs     *jobs.Service
}

// New returns the handlers over st and svc; version is shown in the footer.
func New(st *store.Store, version string, log *slog.Logger, svc Services) *Handler {
	return &Handler{store: st, version: version, log: log, dispatch: svc.Dispatch, jobs: svc.Jobs}
}
