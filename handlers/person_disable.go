package handlers

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/templates"
)

// PersonDisable disables an account after confirmation: sessions end and tokens are
// refused at once; running jobs keep running unless the admin ticks "stop their jobs".
func (h *Handler) PersonDisable(c *gin.Context) {
	name := c.Param("user")
	if !h.confirmed(c, templates.ConfirmData{
		Heading: "Disable " + name + "?",
		Message: name + " is signed out everywhere at once, their API tokens stop working and they cannot sign in until an admin enables them again. Their jobs keep running unless you stop them too.",
		Option:  "stop_jobs", OptionLabel: "Also cancel every queued or running job of " + name,
		Button: "Disable " + name, Back: backTo(c, "/admin/people"),
	}, "back") {
		return
	}
	d, err := h.dir.DisableUser(c.Request.Context(), principal(c).User, name, c.PostForm("stop_jobs") == "true")
	if h.adminFailed(c, err, nil) {
		return
	}
	msg := fmt.Sprintf("Disabled %s: %d sessions ended", d.User.Username, d.SessionsEnded)
	if d.JobsStopped > 0 {
		msg += fmt.Sprintf(", %d jobs cancelled", d.JobsStopped)
	} else if d.JobsLeft > 0 {
		msg += fmt.Sprintf("; %d of their jobs keep running or waiting", d.JobsLeft)
	}
	redirectNotice(c, backTo(c, "/admin/people"), msg+".")
}
