// Package handlers holds Gantry's gin handlers, one small file per action: parse the
// request, validate, call a service, render a templ page or JSON.
package handlers

import (
	"log/slog"

	"github.com/gantry-gpu/gantry/services/store"
)

// Handler carries what the handlers need; the router binds its methods to routes.
type Handler struct {
	store   *store.Store
	version string
	log     *slog.Logger
}

// New returns the handlers over st; version is shown in the footer.
func New(st *store.Store, version string, log *slog.Logger) *Handler {
	return &Handler{store: st, version: version, log: log}
}
