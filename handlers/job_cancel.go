package handlers

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/dispatch"
)

// JobCancel cancels a job: 200 with the job; 409 when it already finished.
func (h *Handler) JobCancel(c *gin.Context) {
	user := currentUser(c)
	if user == nil {
		return
	}
	j := h.jobParam(c)
	if j == nil {
		return
	}
	j, err := h.dispatch.CancelJob(c.Request.Context(), j.ID, "user:"+user.Username, "cancelled by "+user.Username)
	if errors.Is(err, dispatch.ErrFinished) {
		jsonError(c, http.StatusConflict, "finished", "Job "+c.Param("id")+" already ended; there is nothing to cancel.", "")
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	h.answerJob(c, j)
}
