package handlers

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/store"
)

// maxAgentBody bounds an agent request: a heartbeat of a large node, or a log chunk.
const maxAgentBody = 4 << 20

// Agent authenticates an agent request by its node credential (Authorization:
// Bearer) and hands the node to fn. Agents are not users: this is their only
// authentication, and it answers 401 for a wrong or revoked credential.
func (h *Handler) Agent(fn func(c *gin.Context, node *models.Node)) gin.HandlerFunc {
	return func(c *gin.Context) {
		agentActor(c)
		cred, _ := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
		node, err := h.dispatch.Authenticate(c.Request.Context(), strings.TrimSpace(cred))
		if err != nil {
			h.agentError(c, err)
			return
		}
		fn(c, node)
	}
}

// agentActor makes an agent the audit actor of its request; services name the node.
func agentActor(c *gin.Context) {
	c.Request = c.Request.WithContext(audit.WithActor(c.Request.Context(), audit.Actor{
		Name: "agent", Type: models.ActorNode, IP: c.ClientIP(), RequestID: c.GetString(RequestIDKey),
	}))
}

// decodeAgent reads an agent's JSON body into v, answering 400 when it is not JSON.
func decodeAgent(c *gin.Context, v any) bool {
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, maxAgentBody+1))
	switch {
	case err != nil:
		jsonError(c, http.StatusBadRequest, "malformed", "cannot read the body: "+err.Error(), "body")
		return false
	case len(body) > maxAgentBody:
		jsonError(c, http.StatusRequestEntityTooLarge, "too_large", "the body is over 4 MiB", "body")
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		jsonError(c, http.StatusBadRequest, "malformed", "the body is not valid JSON for this request: "+err.Error(), "body")
		return false
	}
	return true
}

// agentError answers an agent with the status its error calls for. Refused
// credentials are logged with where they came from.
func (h *Handler) agentError(c *gin.Context, err error) {
	var off *dispatch.LogOffsetError
	switch {
	case errors.Is(err, dispatch.ErrUnauthorized):
		h.log.Warn("agent refused", slog.String("path", c.Request.URL.Path), slog.String("ip", c.ClientIP()),
			slog.String("request_id", c.GetString(RequestIDKey)), slog.String("why", err.Error()))
		jsonError(c, http.StatusUnauthorized, agentapi.CodeUnauthorized, err.Error(), "")
	case errors.Is(err, dispatch.ErrStaleAttempt):
		jsonError(c, http.StatusConflict, agentapi.CodeStaleAttempt, err.Error(), "")
	case errors.As(err, &off):
		body := agentapi.ErrorBody{NextOffset: &off.Next}
		body.Error.Code, body.Error.Message = agentapi.CodeLogOffset, off.Error()
		c.AbortWithStatusJSON(http.StatusConflict, body)
	case errors.Is(err, store.ErrConflict):
		jsonError(c, http.StatusConflict, "conflict", err.Error(), "")
	default:
		h.failed(c, err, nil)
	}
}
