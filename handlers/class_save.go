package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/classes"
	"github.com/gantry-gpu/gantry/templates"
)

// ClassSave creates a priority class (mode=create) or changes one (mode=update).
func (h *Handler) ClassSave(c *gin.Context) {
	form := templates.ClassForm{Name: strings.TrimSpace(c.PostForm("name")), Weight: strings.TrimSpace(c.PostForm("weight")),
		Grace: strings.TrimSpace(c.PostForm("checkpoint_grace")), MaxRunTime: strings.TrimSpace(c.PostForm("max_run_time")),
		CanPreempt: c.PostForm("can_preempt") == "true", Preemptible: c.PostForm("preemptible") == "true"}
	update := c.PostForm("mode") == "update"
	in, err := classInput(form)
	var saved *models.PriorityClass
	if err == nil {
		if update {
			saved, err = h.classes.Update(c.Request.Context(), in)
		} else {
			saved, err = h.classes.Create(c.Request.Context(), in)
		}
	}
	var nf *classes.NotFoundError
	if errors.As(err, &nf) {
		h.missingPage(c, "No such priority class", capitalize(nf.Error())+".", classesLink)
		return
	}
	if h.failed(c, err, func(fe *models.FieldError) {
		h.renderClasses(c, http.StatusBadRequest, templates.ClassesData{Form: form, Editing: update, Error: fieldMessage(fe), Field: fe.Field}, "")
	}) {
		return
	}
	redirectNotice(c, "/admin/priority-classes", "Saved class "+saved.Name+"; it applies from the next scheduling pass.")
}

func classInput(f templates.ClassForm) (classes.Input, error) {
	in := classes.Input{Name: f.Name, CanPreempt: f.CanPreempt, Preemptible: f.Preemptible}
	var err error
	if in.Weight, err = strconv.Atoi(f.Weight); err != nil {
		return in, models.Invalid("weight", "%q is not a whole number", f.Weight)
	}
	if in.Grace, err = time.ParseDuration(orZeroDuration(f.Grace)); err != nil {
		return in, models.Invalid("checkpoint_grace", "%q is not a duration: write it like 30s or 5m", f.Grace)
	}
	if in.MaxRunTime, err = time.ParseDuration(orZeroDuration(f.MaxRunTime)); err != nil {
		return in, models.Invalid("max_run_time", "%q is not a duration: write it like 24h, or 0 for no limit", f.MaxRunTime)
	}
	return in, nil
}

func orZeroDuration(s string) string {
	if s == "" || s == "0" {
		return "0s"
	}
	return s
}
