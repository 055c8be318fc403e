package handlers

import (
	"context"
	"errors"
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/dispatch"
)

// JobHold keeps a queued job from starting until it is released.
func (h *Handler) JobHold(c *gin.Context) {
	h.holdOrRelease(c, h.dispatch.HoldJob, "Held: it will not start until you release it.",
		"Only a queued job can be held; this one is %s. Cancel it to stop it.")
}

// JobRelease queues a held job again.
func (h *Handler) JobRelease(c *gin.Context) {
	h.holdOrRelease(c, h.dispatch.ReleaseJob, "Released: it is queued again and keeps its place by age.",
		"Only a held job can be released; this one is %s.")
}

func (h *Handler) holdOrRelease(c *gin.Context, act func(ctx context.Context, jobID int64, actor, message string) (*models.Job, error), done, wrong string) {
	j := h.jobPageParam(c)
	if j == nil {
		return
	}
	_, err := act(c.Request.Context(), j.ID, "user:"+principal(c).User.Username, "")
	switch {
	case errors.Is(err, dispatch.ErrWrongState):
		backToJob(c, j, fmt.Sprintf(wrong, j.State))
	case err != nil:
		h.serverError(c, err)
	default:
		backToJob(c, j, done)
	}
}
