package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/quotas"
	"github.com/gantry-gpu/gantry/templates"
)

// QuotaSave sets a team's quota for a GPU model from the form. Bad input re-shows the
// form naming the field; a guarantee below the current use is saved and the page says
// what that means.
func (h *Handler) QuotaSave(c *gin.Context) {
	form := templates.QuotaForm{Team: c.PostForm("team"), Model: strings.TrimSpace(c.PostForm("gpu_model")), Cohort: c.PostForm("cohort"),
		Guaranteed: c.PostForm("guaranteed"), Borrowing: c.PostForm("borrowing_limit"), Lending: c.PostForm("lending_limit"),
		CPU: c.PostForm("cpu"), Memory: c.PostForm("memory")}
	in, err := quotaInput(form)
	var saved quotas.Saved
	if err == nil {
		saved, err = h.quotas.Save(c.Request.Context(), in)
	}
	var fe *models.FieldError
	switch {
	case errors.As(err, &fe):
		h.renderQuotas(c, http.StatusBadRequest, templates.QuotasData{Form: form, Error: fieldMessage(fe), Field: fe.Field}, false)
		return
	case err != nil:
		h.serverError(c, err)
		return
	}
	target := "/admin/quotas?notice=" + url.QueryEscape("Saved the quota of "+in.Team+" for "+modelLabel(in.GPUModel)+"; it applies at the next scheduling pass.")
	if saved.Warning != "" {
		target += "&warning=" + url.QueryEscape(saved.Warning)
	}
	c.Redirect(http.StatusSeeOther, target)
}

// quotaInput reads the form's numbers: GPUs and cores with up to three decimals, GiB.
func quotaInput(f templates.QuotaForm) (quotas.Input, error) {
	in := quotas.Input{Team: f.Team, GPUModel: f.Model, Cohort: f.Cohort}
	var err error
	if in.NominalMilli, err = quotas.ParseGPUs("guaranteed", f.Guaranteed); err != nil {
		return in, err
	}
	for _, o := range []struct {
		field, value string
		to           **int64
	}{{"borrowing_limit", f.Borrowing, &in.BorrowingLimitMilli}, {"lending_limit", f.Lending, &in.LendingLimitMilli}} {
		if strings.TrimSpace(o.value) == "" {
			continue
		}
		v, err := quotas.ParseGPUs(o.field, o.value)
		if err != nil {
			return in, err
		}
		*o.to = &v
	}
	if in.CPUMilli, err = quotas.ParseMilli("cpu", orZero(f.CPU), "cores"); err != nil {
		return in, err
	}
	gib, err := quotas.ParseMilli("memory", orZero(f.Memory), "GiB")
	if err != nil {
		return in, err
	}
	in.MemoryMiB = gib * 1024 / 1000
	return in, nil
}

func orZero(s string) string {
	if strings.TrimSpace(s) == "" {
		return "0"
	}
	return s
}

func modelLabel(m string) string {
	if m == "" {
		return "any model"
	}
	return m
}
