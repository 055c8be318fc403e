package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// JobNew is the submit form. Plainly opened it starts from defaults, with ?clone=ID from
// an earlier job, with ?project=P&template=NAME from a saved template, with ?project=P in
// that project. Nothing else comes from the URL: a link can neither carry what is typed
// (a query ends up in access logs) nor fill in a command or environment that a person
// might submit unread. As fields change the form asks JobNewRefresh.
func (h *Handler) JobNew(c *gin.Context) {
	q := c.Request.URL.Query()
	var d templates.JobNewData
	switch {
	case q.Get("clone") != "":
		form, ok := h.cloneForm(c, q.Get("clone"))
		if !ok {
			return
		}
		d.Form = form
		d.Notice = "A copy of job " + q.Get("clone") + ": change what you need, then submit."
	case q.Get("template") != "":
		form, ok := h.templateForm(c, q.Get("project"), q.Get("template"))
		if !ok {
			return
		}
		d.Form = form
		d.Notice = "Filled in from template " + q.Get("template") + ": change what you need, then submit."
		if q.Get("saved") != "" {
			d.Notice = "Saved template " + q.Get("template") + " of " + form.Project + ". It is filled in below: submit it now, or start it from this page another time."
		}
	default:
		d.Form = defaultJobForm(q.Get("project"))
	}
	h.renderJobNew(c, http.StatusOK, d, false)
}

// cloneForm fills the form from job id, which the user must be allowed to read.
func (h *Handler) cloneForm(c *gin.Context, id string) (templates.JobForm, bool) {
	ctx := c.Request.Context()
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		h.errorPage(c, http.StatusBadRequest, "No such job", "clone names a job by its number, e.g. /jobs/new?clone=12.")
		return templates.JobForm{}, false
	}
	j, err := h.jobs.Job(ctx, n)
	if errors.Is(err, store.ErrNotFound) {
		h.missingPage(c, "No such job", "There is no job "+id+" to copy.", templates.Link{Href: "/jobs", Text: "Pick one from the jobs list"})
		return templates.JobForm{}, false
	}
	if err != nil {
		h.serverError(c, err)
		return templates.JobForm{}, false
	}
	perm, err := h.authz.InProject(ctx, principal(c).User.ID, j.ProjectID)
	if err != nil {
		h.serverError(c, err)
		return templates.JobForm{}, false
	}
	if !perm.CanRead(authz.Jobs) {
		h.deny(c, "Not allowed", "You may not copy job "+id+": it belongs to a project you have no role in. Ask a team lead of that project for the viewer role.")
		return templates.JobForm{}, false
	}
	spec, err := h.jobs.SpecOf(ctx, j)
	if err != nil {
		h.serverError(c, err)
		return templates.JobForm{}, false
	}
	return formOfSpec(spec, j.ImageID != nil), true
}

// templateForm fills the form from the template name of project, which the user must
// be allowed to read.
func (h *Handler) templateForm(c *gin.Context, project, name string) (templates.JobForm, bool) {
	ctx := c.Request.Context()
	p, err := h.store.ProjectByName(ctx, project)
	if errors.Is(err, store.ErrNotFound) {
		h.missingPage(c, "No such project", "There is no project "+project+".", templates.Link{Href: "/jobs/new", Text: "Pick a template from the submit form"})
		return templates.JobForm{}, false
	}
	if err != nil {
		h.serverError(c, err)
		return templates.JobForm{}, false
	}
	perm, err := h.authz.InProject(ctx, principal(c).User.ID, p.ID)
	if err != nil {
		h.serverError(c, err)
		return templates.JobForm{}, false
	}
	if !perm.CanRead(authz.Jobs) {
		h.deny(c, "Not allowed", "You may not use the templates of project "+p.Name+": you have no role in it. Ask a team lead of project "+p.Name+" or a Gantry admin for the viewer role.")
		return templates.JobForm{}, false
	}
	t, err := h.jobs.TemplateByName(ctx, p, name)
	if errors.Is(err, store.ErrNotFound) {
		h.missingPage(c, "No such template", "Project "+p.Name+" has no template called "+name+".", templates.Link{Href: "/jobs/new?project=" + url.QueryEscape(p.Name), Text: "Its templates are listed on the submit form"})
		return templates.JobForm{}, false
	}
	if err != nil {
		h.serverError(c, err)
		return templates.JobForm{}, false
	}
	catalog, err := h.inCatalog(ctx, t.Spec.Image)
	if err != nil {
		h.serverError(c, err)
		return templates.JobForm{}, false
	}
	return formOfSpec(t.Spec, catalog), true
}

// inCatalog says whether image is empty (the project's default) or a catalog entry's
// name, rather than a custom reference.
func (h *Handler) inCatalog(ctx context.Context, image string) (bool, error) {
	if image == "" {
		return true, nil
	}
	_, err := h.store.ImageByName(ctx, image)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// renderJobNew renders the form with what it offers and the preview of what it holds;
// recommend applies the recommended profile first, when there is one.
func (h *Handler) renderJobNew(c *gin.Context, status int, d templates.JobNewData, recommend bool) {
	ctx := c.Request.Context()
	user := principal(c).User
	d.CommandMax = jobs.MaxCommandBytes
	projects, err := h.submitProjects(ctx, user.ID)
	if err != nil {
		h.serverError(c, err)
		return
	}
	for _, p := range projects {
		d.Projects = append(d.Projects, p.Name)
	}
	page := h.page(c, "Submit a job", "jobs")
	if len(projects) == 0 {
		render(c, status, templates.JobNew(page, d))
		return
	}
	i := slices.IndexFunc(projects, func(p models.Project) bool { return p.Name == d.Form.Project })
	if i < 0 {
		// Only where the user may submit: a preview reads the project's history.
		i, d.Form.Project = 0, projects[0].Name
	}
	d.AllowCustom = projects[i].AllowCustomImages
	if d.Templates, err = h.templateOptions(ctx, &projects[i]); err != nil {
		h.serverError(c, err)
		return
	}
	if err := h.jobFormChoices(ctx, &d); err != nil {
		h.serverError(c, err)
		return
	}
	pv, err := h.previewForm(ctx, user, &d)
	if err == nil && recommend && pv.Recommendation != nil {
		applyRecommendation(&d.Form, pv.Recommendation.GPUs, pv.Recommendation.Shape.Model, pv.Recommendation.Shape.Milli, pv.Recommendation.Shape.MIGProfile, pv.Recommendation.Shape.MemoryMiB)
		d.Notice = "The recommended profile is filled in: " + pv.Recommendation.Evidence + "."
		pv, err = h.previewForm(ctx, user, &d)
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	if pv.Placement != nil {
		for _, k := range pv.Placement.Fleet {
			if !slices.Contains(d.GPUModels, k.Model) {
				d.GPUModels = append(d.GPUModels, k.Model)
			}
		}
	}
	render(c, status, templates.JobNew(page, d))
}

// applyRecommendation sets the GPU fields to a recommended shape.
func applyRecommendation(f *templates.JobForm, gpus int, model string, milli int, mig string, memMiB int64) {
	f.Preset, f.GPUs, f.GPUModel, f.MIGProfile, f.GPUShare, f.GPUMemoryGiB = customPreset, strconv.Itoa(max(gpus, 1)), model, mig, "", ""
	if mig == "" && milli > 0 && milli < 1000 {
		f.GPUShare, f.GPUMemoryGiB = decimal(float64(milli)/1000), gib(memMiB)
	}
}

// jobFormChoices fills in the images, classes and presets the form offers.
func (h *Handler) jobFormChoices(ctx context.Context, d *templates.JobNewData) error {
	imgs, err := h.store.Images(ctx)
	if err != nil {
		return err
	}
	for _, img := range imgs {
		if img.Status == models.ImageDeprecated {
			continue
		}
		label := img.Name
		if img.Framework != "" && !img.Builtin {
			label += " · " + img.Framework + " " + img.FrameworkVersion
		}
		if img.CUDAVersion != "" {
			label += " · CUDA " + img.CUDAVersion
		}
		if img.Status != models.ImageCertified && !img.Builtin {
			label += " (uncertified)"
		}
		d.Images = append(d.Images, templates.ImageOption{Name: img.Name, Label: label, Certified: img.Status == models.ImageCertified})
	}
	classes, err := h.store.PriorityClasses(ctx)
	if err != nil {
		return err
	}
	for _, pc := range classes {
		label := pc.Name
		if pc.Preemptible {
			label += " (preemptible by default)"
		}
		d.Classes = append(d.Classes, templates.Option{Value: pc.Name, Label: label})
	}
	if d.Form.PriorityClass == "" {
		d.Form.PriorityClass = "research"
	}
	d.Presets = presetOptions()
	return nil
}

// previewForm works out the preview of the form's job; a form that does not read
// as a job gets the reason in the preview.
func (h *Handler) previewForm(ctx context.Context, user *models.User, d *templates.JobNewData) (jobs.Preview, error) {
	spec, err := specOfForm(d.Form)
	var fe *models.FieldError
	if errors.As(err, &fe) {
		d.Preview.Missing = stillToFill(d.Form, fe)
		if d.Preview.Missing == "" {
			_, d.Preview.Invalid = formError(d.Form, fe)
		}
		return jobs.Preview{}, nil
	}
	pv, err := h.preview.Preview(ctx, user, spec)
	if err != nil {
		return pv, err
	}
	cur, err := h.cost.Currency(ctx)
	if err != nil {
		return pv, err
	}
	d.Preview = previewView(pv, spec.ExpectedRunSec, cur)
	if pv.Invalid != nil {
		d.Preview.Missing = stillToFill(d.Form, pv.Invalid)
		if d.Preview.Missing == "" {
			_, d.Preview.Invalid = formError(d.Form, pv.Invalid)
		}
	}
	return pv, nil
}

// stillToFill asks for the name and command when fe is about one of them left empty:
// the form opens without either, and an error there, before anything was typed, would
// scold rather than say what to do. Any other problem is fe's to say.
func stillToFill(f templates.JobForm, fe *models.FieldError) string {
	noName, noCommand := strings.TrimSpace(f.Name) == "", strings.TrimSpace(f.Command) == ""
	switch field := formFieldOf(f, fe.Field); {
	case field == "name" && noName && noCommand, field == "command" && noName && noCommand:
		return "Give the job a name and a command: this panel then says what it costs and whether it can start now."
	case field == "name" && noName:
		return "Give the job a name: this panel then says what it costs and whether it can start now."
	case field == "command" && noCommand:
		return "Give the job a command: this panel then says what it costs and whether it can start now."
	}
	return ""
}

// previewView is the preview as the page shows it, its amounts in currency.
func previewView(pv jobs.Preview, expectedSec int64, currency string) templates.JobPreview {
	v := templates.JobPreview{NoScheduler: pv.Placement == nil, Uncertified: pv.Uncertified}
	if pl := pv.Placement; pl != nil {
		v.Placed, v.Where, v.Reason, v.Queued, v.Preempts = pl.Placed, pl.Where, pl.Reason, pl.Queued, pl.Preempts
	}
	var unpriced []string
	priced := false
	for _, c := range pv.Costs {
		o := templates.CostOption{Model: c.GPUModel, PerHour: accounting.FormatAmount(c.PerHourMicros, currency)}
		if expectedSec > 0 {
			o.ForRun = "≈ " + accounting.FormatAmount(c.PerHourMicros*expectedSec/3600, currency) + " for the expected " + shortDuration(time.Duration(expectedSec)*time.Second)
		}
		priced = priced || c.PerHourMicros > 0
		v.Costs = append(v.Costs, o)
		for _, u := range c.Unpriced {
			if !slices.Contains(unpriced, u) {
				unpriced = append(unpriced, u)
			}
		}
	}
	v.NoRates = !priced
	v.Unpriced = strings.Join(unpriced, ", ")
	if r := pv.Recommendation; r != nil {
		v.Recommended = r.Evidence
	}
	return v
}

// shortDuration writes 2h0m0s as 2h and 1h30m0s as 1h30m.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// submitProjects lists the projects where the user may submit jobs, by name.
func (h *Handler) submitProjects(ctx context.Context, userID int64) ([]models.Project, error) {
	global, err := h.authz.Global(ctx, userID)
	if err != nil {
		return nil, err
	}
	var candidates []models.Project
	if global.CanWrite(authz.Jobs) {
		if candidates, err = h.store.Projects(ctx); err != nil {
			return nil, err
		}
	} else {
		ms, err := h.store.MembershipsOfUser(ctx, userID)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			p, err := h.store.ProjectByID(ctx, m.ProjectID)
			if err != nil {
				return nil, err
			}
			candidates = append(candidates, *p)
		}
	}
	var out []models.Project
	for _, p := range candidates {
		if p.Archived {
			continue
		}
		perm, err := h.authz.InProject(ctx, userID, p.ID)
		if err != nil {
			return nil, err
		}
		if perm.CanWrite(authz.Jobs) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b models.Project) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// templateOptions lists the templates of project for the form.
func (h *Handler) templateOptions(ctx context.Context, project *models.Project) ([]templates.TemplateOption, error) {
	list, err := h.jobs.Templates(ctx, project)
	if err != nil {
		return nil, err
	}
	out := make([]templates.TemplateOption, len(list))
	for i, t := range list {
		out[i] = templates.TemplateOption{Name: t.Name, Summary: resourceSummary(t.Spec.Resources) + " · " + t.Spec.PriorityClass, SavedBy: t.CreatedBy}
	}
	return out, nil
}

// resourceSummary says what one replica asks for, as the job list would.
func resourceSummary(r jobs.Resources) string {
	var parts []string
	switch {
	case r.MIGProfile != "":
		parts = append(parts, "MIG "+r.MIGProfile)
	case r.GPUMilli > 0:
		parts = append(parts, decimal(float64(r.GPUMilli)/1000)+" GPU")
	case r.GPUs > 0:
		parts = append(parts, strconv.Itoa(r.GPUs)+" GPU")
	default:
		parts = append(parts, "no GPU")
	}
	if r.GPUModel != "" {
		parts[0] += " " + r.GPUModel
	}
	if r.CPUMilli > 0 {
		parts = append(parts, decimal(float64(r.CPUMilli)/1000)+" CPU")
	}
	if r.MemoryMiB > 0 {
		parts = append(parts, gib(r.MemoryMiB)+" GiB RAM")
	}
	return strings.Join(parts, ", ")
}
