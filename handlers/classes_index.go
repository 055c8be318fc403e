package handlers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// ClassesIndex lists the priority classes and the form to add one, or with ?edit= to
// change one.
func (h *Handler) ClassesIndex(c *gin.Context) {
	h.renderClasses(c, http.StatusOK, templates.ClassesData{Notice: c.Query("notice"), Form: templates.ClassForm{Grace: "2m0s", MaxRunTime: "0s"}}, c.Query("edit"))
}

// renderClasses renders the page; edit names a class whose values fill the form.
func (h *Handler) renderClasses(c *gin.Context, status int, d templates.ClassesData, edit string) {
	ctx := c.Request.Context()
	classes, err := h.store.PriorityClasses(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	for _, pc := range classes {
		jobs, err := h.store.CountJobsOfClass(ctx, pc.Name)
		if err != nil {
			h.serverError(c, err)
			return
		}
		d.Classes = append(d.Classes, templates.ClassRow{Name: pc.Name, Weight: pc.Weight, CanPreempt: pc.CanPreempt, Preemptible: pc.Preemptible,
			Grace: seconds(int64(pc.CheckpointGraceSec)), MaxRunTime: maxRunTime(pc), Jobs: jobs})
		if pc.Name == edit {
			d.Editing = true
			d.Form = templates.ClassForm{Name: pc.Name, Weight: strconv.Itoa(pc.Weight), CanPreempt: pc.CanPreempt, Preemptible: pc.Preemptible,
				Grace: seconds(int64(pc.CheckpointGraceSec)), MaxRunTime: seconds(pc.MaxRunTimeSec)}
		}
	}
	d.CanAdmin = canAdmin(c)
	if d.Changes, err = h.recentChanges(ctx, store.AuditFilter{ObjectTypes: []string{"priority_class"}}); err != nil {
		h.serverError(c, err)
		return
	}
	render(c, status, templates.Classes(h.page(c, "Priority classes", "admin"), d))
}

func seconds(n int64) string { return (time.Duration(n) * time.Second).String() }

func maxRunTime(pc models.PriorityClass) string {
	if pc.MaxRunTimeSec == 0 {
		return "no limit"
	}
	return seconds(pc.MaxRunTimeSec)
}
