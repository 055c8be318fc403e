package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// maxDrain bounds how long a drain may let jobs run on.
const maxDrain = 30 * 24 * time.Hour

// NodeAdminStateUpdate cordons a node, drains it with a deadline, or returns it to
// service, from the console (through dispatch, audited). A drain asks first.
func (h *Handler) NodeAdminStateUpdate(c *gin.Context) {
	name, state := c.Param("name"), c.PostForm("state")
	var deadline time.Time
	verb := map[string]string{models.NodeCordoned: "cordoned", models.NodeDraining: "draining", models.NodeReady: "back in service"}[state]
	if verb == "" {
		h.errorPage(c, http.StatusBadRequest, "Bad request", "State: say cordoned, draining or ready.")
		return
	}
	if state == models.NodeDraining {
		drainFor := strings.TrimSpace(c.PostForm("drain_for"))
		d, err := time.ParseDuration(drainFor)
		if err != nil || d < 0 || d > maxDrain {
			h.errorPage(c, http.StatusBadRequest, "Bad request", fmt.Sprintf("Drain for: %q is not a duration from 0s to 720h: write it like 30m or 2h (0s stops running jobs at once).", drainFor))
			return
		}
		if !h.confirmed(c, templates.ConfirmData{
			Heading: "Drain node " + name + "?",
			Message: fmt.Sprintf("No new job starts on %s. Jobs that run there now may go on for %s; then they are asked to checkpoint and stop, and resume on another node.", name, d),
			Button:  "Drain " + name, Back: backTo(c, "/admin/nodes"),
		}, "state", "drain_for", "back") {
			return
		}
		deadline = time.Now().Add(d)
	}
	who := principal(c).User.Username
	n, err := h.dispatch.SetNodeState(c.Request.Context(), name, state, verb+" by "+who, deadline)
	if h.nodeActionFailed(c, err, nil) {
		return
	}
	msg := "Node " + n.Name + " is " + verb + "."
	if n.DrainDeadline != nil {
		msg = "Node " + n.Name + " is draining: its jobs stop at " + n.DrainDeadline.UTC().Format(time.DateTime) + " UTC."
	}
	redirectNotice(c, backTo(c, "/admin/nodes"), msg)
}

// nodeActionFailed answers a node action's error; it reports whether there was one. Bad
// input goes to invalid where the form is shown again, else to an error page.
func (h *Handler) nodeActionFailed(c *gin.Context, err error, invalid func(*models.FieldError)) bool {
	if errors.Is(err, store.ErrNotFound) {
		h.missingPage(c, "No such node", "There is no node "+c.Param("name")+".", nodesLink)
		return true
	}
	if invalid == nil {
		invalid = func(fe *models.FieldError) {
			h.errorPage(c, http.StatusBadRequest, "Not possible", capitalize(fe.Message)+".")
		}
	}
	return h.failed(c, err, invalid)
}
