package handlers

import (
	"errors"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/quotas"
	"github.com/gantry-gpu/gantry/templates"
)

// QuotaDelete removes a quota after confirmation.
func (h *Handler) QuotaDelete(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		h.missingPage(c, "No such quota", "There is no quota "+c.Param("id")+".", quotasLink)
		return
	}
	if !h.confirmed(c, templates.ConfirmData{
		Heading: "Remove this quota?",
		Message: "The team's use of this model is then limited only by its other quotas (none left: not at all). Running jobs are not affected.",
		Button:  "Remove quota", Back: "/admin/quotas",
	}) {
		return
	}
	name, err := h.quotas.Delete(c.Request.Context(), id)
	var nf *quotas.NotFoundError
	if errors.As(err, &nf) {
		h.missingPage(c, "No such quota", capitalize(nf.Error())+".", quotasLink)
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	redirectNotice(c, "/admin/quotas", "Removed the quota "+name+".")
}
