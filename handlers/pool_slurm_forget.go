package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// PoolSlurmJobsForget gives up, after confirmation, the open Slurm jobs of a Slurm
// pool whose slurm.conf leads to another cluster than theirs: their Gantry jobs fail
// as lost and the pool takes the new cluster's nodes.
func (h *Handler) PoolSlurmJobsForget(c *gin.Context) {
	name := c.Param("name")
	back := "/admin/pools/" + url.PathEscape(name)
	if !h.confirmed(c, templates.ConfirmData{
		Heading: "Forget the jobs of pool " + name + "'s old cluster?",
		Message: "Each Gantry job whose Slurm job waits or runs on the cluster the pool no longer reaches fails as lost (a held job stays held and is submitted anew once released). " +
			"Gantry no longer follows, stops or charges those Slurm jobs: if one still runs there, stop it with scancel on that cluster. The pool then takes the nodes of the cluster its slurm.conf leads to now. This cannot be undone.",
		Button: "Forget the jobs", Back: back,
	}) {
		return
	}
	n, err := h.dispatch.ForgetSlurmJobs(c.Request.Context(), name, "user:"+principal(c).User.Username)
	if errors.Is(err, store.ErrNotFound) {
		h.missingPage(c, "No such pool", fmt.Sprintf("There is no pool %q.", name), poolsLink)
		return
	}
	if h.failed(c, err, func(fe *models.FieldError) {
		h.errorPage(c, http.StatusBadRequest, "Not possible", capitalize(fe.Message)+".")
	}) {
		return
	}
	what := fmt.Sprintf("%d Slurm jobs", n)
	if n == 1 {
		what = "1 Slurm job"
	}
	redirectNotice(c, back, "Forgot "+what+" of the old cluster: their Gantry jobs failed as lost, a held one stays held. The pool takes the new cluster's nodes at its next pass.")
}
