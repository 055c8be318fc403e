package handlers

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/classes"
	"github.com/gantry-gpu/gantry/templates"
)

// ClassDelete removes a priority class no unfinished job uses, after confirmation.
func (h *Handler) ClassDelete(c *gin.Context) {
	name := c.Param("name")
	if !h.confirmed(c, templates.ConfirmData{
		Heading: "Remove priority class " + name + "?",
		Message: "New jobs can no longer choose it. This is refused while a job of the class has not ended.",
		Button:  "Remove class", Back: "/admin/priority-classes",
	}) {
		return
	}
	err := h.classes.Delete(c.Request.Context(), name)
	var nf *classes.NotFoundError
	if errors.As(err, &nf) {
		h.missingPage(c, "No such priority class", capitalize(nf.Error())+".", classesLink)
		return
	}
	if h.failed(c, err, func(fe *models.FieldError) {
		h.errorPage(c, http.StatusBadRequest, "Not possible", capitalize(fe.Message)+".")
	}) {
		return
	}
	redirectNotice(c, "/admin/priority-classes", "Removed class "+name+".")
}
