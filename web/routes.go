package web

import (
	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/handlers"
)

// route is one line of the route table.
type route struct {
	method  string
	path    string
	handler gin.HandlerFunc
}

// routes is every route Gantry serves, in one table.
func routes(h *handlers.Handler) []route {
	return []route{
		{"GET", "/healthz", h.Healthz},
		{"GET", "/readyz", h.Readyz},
		{"GET", "/", h.HomeShow},
	}
}
