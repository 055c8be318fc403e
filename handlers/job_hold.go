package handlers

import (
	"context"
	"errors"
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/dispatch"
)

// JobHold keeps a job from running until it is released: a queued one at once, a
// running one once it checkpointed and stopped.
func (h *Handler) JobHold(c *gin.Context) {
	h.holdOrRelease(c, h.dispatch.HoldJob, holdDone, "Only a queued or running job can be held; this one is %s.")
}

// JobRelease queues a held job again.
func (h *Handler) JobRelease(c *gin.Context) {
	h.holdOrRelease(c, h.dispatch.ReleaseJob, func(*models.Job) string {
		return "Released: it is queued again, keeps its place by age, and resumes from its checkpoint if it saved one."
	}, "Only a held job can be released; this one is %s.")
}

// holdDone says what a hold did, by the state it left the job in.
func holdDone(j *models.Job) string {
	if j.State == models.JobPreempting {
		return "Holding: the running attempt is asked to checkpoint and stop, then the job stays held until you release it."
	}
	return "Held: it will not start until you release it."
}

func (h *Handler) holdOrRelease(c *gin.Context, act func(ctx context.Context, jobID int64, actor, message string) (*models.Job, error), done func(*models.Job) string, wrong string) {
	j := h.jobPageParam(c)
	if j == nil {
		return
	}
	after, err := act(c.Request.Context(), j.ID, "user:"+principal(c).User.Username, "")
	switch {
	case errors.Is(err, dispatch.ErrWrongState):
		backToJob(c, j, fmt.Sprintf(wrong, j.State))
	case err != nil:
		h.serverError(c, err)
	default:
		backToJob(c, j, done(after))
	}
}
