package handlers

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/dispatch"
)

// JobHoldAPI holds a job: 200 with the job, held, or preempting while its running
// attempt checkpoints and stops; 409 when it is neither queued nor running.
func (h *Handler) JobHoldAPI(c *gin.Context) {
	h.holdOrReleaseAPI(c, h.dispatch.HoldJob, "only a queued, scheduled or running job can be held")
}

// JobReleaseAPI queues a held job again: 200 with the job; 409 when it is not held.
func (h *Handler) JobReleaseAPI(c *gin.Context) {
	h.holdOrReleaseAPI(c, h.dispatch.ReleaseJob, "only a held job can be released")
}

func (h *Handler) holdOrReleaseAPI(c *gin.Context, act func(ctx context.Context, jobID int64, actor, message string) (*models.Job, error), wrong string) {
	user := currentUser(c)
	if user == nil {
		return
	}
	j := h.jobParam(c)
	if j == nil {
		return
	}
	after, err := act(c.Request.Context(), j.ID, "user:"+user.Username, "")
	if errors.Is(err, dispatch.ErrWrongState) {
		jsonError(c, http.StatusConflict, "wrong_state", "Job "+c.Param("id")+" is "+j.State+"; "+wrong+".", "")
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	h.answerJob(c, after)
}
