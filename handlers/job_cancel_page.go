package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/templates"
)

// JobCancelPage cancels a job from its page, after confirmation, and shows the page
// again with what happened; a running attempt is asked to stop. A job that already
// ended is not asked about: there is nothing to confirm.
func (h *Handler) JobCancelPage(c *gin.Context) {
	j := h.jobPageParam(c)
	if j == nil {
		return
	}
	id := strconv.FormatInt(j.ID, 10)
	if !models.IsTerminal(j.State) && !h.confirmed(c, templates.ConfirmData{
		Heading: "Cancel job " + j.Name + " (#" + id + ")?",
		Message: "A queued job leaves the queue; a running one is stopped now, and its logs stay. This cannot be undone: Re-run starts it again as a new job.",
		Button:  "Cancel job " + j.Name, Back: "/jobs/" + id, BackLabel: "Keep it", Section: "jobs",
	}) {
		return
	}
	user := principal(c).User
	_, err := h.dispatch.CancelJob(c.Request.Context(), j.ID, "user:"+user.Username, "cancelled by "+user.Username)
	switch {
	case errors.Is(err, dispatch.ErrFinished):
		backToJob(c, j, "Job "+id+" had already ended ("+j.State+"); there was nothing to cancel.")
	case err != nil:
		h.serverError(c, err)
	default:
		backToJob(c, j, "Cancelled. A running attempt is stopped now; its logs stay here.")
	}
}

// backToJob sends the browser to the job's page with a notice.
func backToJob(c *gin.Context, j *models.Job, notice string) {
	c.Redirect(http.StatusSeeOther, "/jobs/"+strconv.FormatInt(j.ID, 10)+"?notice="+url.QueryEscape(notice))
}
