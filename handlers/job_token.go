package handlers

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/dispatch"
)

// Job authenticates a request of a running job by its job token (Authorization:
// Bearer GANTRY_JOB_TOKEN), which speaks only for the job of the :id path parameter:
// 401 for a missing, unknown or ended token, 403 for another job's.
func (h *Handler) Job(fn func(c *gin.Context, caller *dispatch.JobCaller)) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := strconv.ParseInt(c.Param("id"), 10, 64)
		if err != nil || id <= 0 {
			jsonError(c, http.StatusBadRequest, "invalid", "a job id is a positive integer", "id")
			return
		}
		token, _ := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
		caller, err := h.dispatch.AuthenticateJob(c.Request.Context(), strings.TrimSpace(token), id)
		switch {
		case errors.Is(err, dispatch.ErrUnauthorized):
			h.log.Warn("job token refused", slog.String("path", c.Request.URL.Path), slog.String("ip", c.ClientIP()),
				slog.String("request_id", c.GetString(RequestIDKey)), slog.String("why", err.Error()))
			jsonError(c, http.StatusUnauthorized, "unauthorized", err.Error(), "")
		case errors.Is(err, dispatch.ErrOtherJob):
			jsonError(c, http.StatusForbidden, "forbidden", "This job token speaks for another job: a job reports only its own metrics.", "")
		case err != nil:
			h.serverError(c, err)
		default:
			fn(c, caller)
		}
	}
}
