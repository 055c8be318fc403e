package web

import (
	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/services/agentapi"
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

		{"POST", "/api/v1/jobs", h.JobCreate},
		{"GET", "/api/v1/jobs/:id", h.JobShow},
		{"GET", "/api/v1/jobs/:id/logs", h.JobLogs},

		// The agent protocol: agents authenticate with their node credential, not as users.
		{"POST", agentapi.PathJoin, h.AgentJoin},
		{"POST", agentapi.PathHeartbeat, h.Agent(h.AgentHeartbeat)},
		{"GET", agentapi.PathLeases, h.Agent(h.AgentLeases)},
		{"POST", agentapi.PathReport, h.Agent(h.AgentReport)},
		{"POST", agentapi.PathLogs, h.Agent(h.AgentLogs)},
	}
}
