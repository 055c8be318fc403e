package handlers

import (
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
		CPU: c.PostForm("cpu"), CPUBorrowing: c.PostForm("cpu_borrowing_limit"), CPULending: c.PostForm("cpu_lending_limit"),
		Memory: c.PostForm("memory"), MemoryBorrowing: c.PostForm("memory_borrowing_limit"), MemoryLending: c.PostForm("memory_lending_limit")}
	in, err := quotaInput(form)
	var saved quotas.Saved
	if err == nil {
		saved, err = h.quotas.Save(c.Request.Context(), in)
	}
	if h.failed(c, err, func(fe *models.FieldError) {
		h.renderQuotas(c, http.StatusBadRequest, templates.QuotasData{Form: form, Error: fieldMessage(fe), Field: fe.Field}, false)
	}) {
		return
	}
	target := "/admin/quotas?notice=" + url.QueryEscape("Saved the quota of "+in.Team+" for "+modelLabel(in.GPUModel)+"; it applies at the next scheduling pass.")
	if saved.Warning != "" {
		target += "&warning=" + url.QueryEscape(saved.Warning)
	}
	c.Redirect(http.StatusSeeOther, target)
}

// quotaInput reads the form's numbers: GPUs and cores with up to three decimals, GiB;
// an empty limit is none.
func quotaInput(f templates.QuotaForm) (quotas.Input, error) {
	in := quotas.Input{Team: f.Team, GPUModel: f.Model, QuotaLimits: models.QuotaLimits{Cohort: f.Cohort}}
	gib := func(field, s string) (int64, error) {
		v, err := quotas.ParseMilli(field, s, "GiB")
		return v * 1024 / 1000, err
	}
	cores := func(field, s string) (int64, error) { return quotas.ParseMilli(field, s, "cores") }
	for _, o := range []struct {
		field, value string
		parse        func(field, s string) (int64, error)
		to           *int64
	}{
		{"guaranteed", f.Guaranteed, quotas.ParseGPUs, &in.NominalMilli},
		{"cpu", orZero(f.CPU), cores, &in.CPUMilli},
		{"memory", orZero(f.Memory), gib, &in.MemoryMiB},
	} {
		v, err := o.parse(o.field, o.value)
		if err != nil {
			return in, err
		}
		*o.to = v
	}
	for _, o := range []struct {
		field, value string
		parse        func(field, s string) (int64, error)
		to           **int64
	}{
		{"borrowing_limit", f.Borrowing, quotas.ParseGPUs, &in.BorrowingLimitMilli},
		{"lending_limit", f.Lending, quotas.ParseGPUs, &in.LendingLimitMilli},
		{"cpu_borrowing_limit", f.CPUBorrowing, cores, &in.CPUBorrowingLimitMilli},
		{"cpu_lending_limit", f.CPULending, cores, &in.CPULendingLimitMilli},
		{"memory_borrowing_limit", f.MemoryBorrowing, gib, &in.MemoryBorrowingLimitMiB},
		{"memory_lending_limit", f.MemoryLending, gib, &in.MemoryLendingLimitMiB},
	} {
		if strings.TrimSpace(o.value) == "" {
			continue
		}
		v, err := o.parse(o.field, o.value)
		if err != nil {
			return in, err
		}
		*o.to = &v
	}
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
