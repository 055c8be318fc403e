package handlers

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// PeopleIndex lists the people of the installation with their roles, 100 a page,
// searchable by name or e-mail.
func (h *Handler) PeopleIndex(c *gin.Context) {
	ctx := c.Request.Context()
	filter, ok := h.peopleFilterOf(c)
	if !ok {
		return
	}
	d := templates.PeopleData{Notice: c.Query("notice"), Query: filter.q}
	users, err := h.store.Users(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	shown, pager := filter.apply(users)
	d.Pager = pager
	ids := make([]int64, len(shown))
	for i, u := range shown {
		ids[i] = u.ID
	}
	roles, err := h.store.ProjectRolesOfUsers(ctx, ids)
	if err != nil {
		h.serverError(c, err)
		return
	}
	mailsOff, err := h.store.MailOptOutUsers(ctx, models.MailTopicFeedback, ids)
	if err != nil {
		h.serverError(c, err)
		return
	}
	for _, u := range shown {
		row := templates.PersonRow{Username: u.Username, DisplayName: u.DisplayName, Email: u.Email, SignIn: "password",
			Admin: u.IsAdmin, Auditor: u.IsAuditor, Disabled: u.Disabled, FeedbackEmails: !mailsOff[u.ID]}
		if u.Issuer != "" {
			row.SignIn = "single sign-on (" + u.Issuer + ")"
		}
		if u.LastLoginAt != nil {
			row.LastLogin = u.LastLoginAt.UTC().Format(time.DateTime)
		}
		for _, r := range roles[u.ID] {
			row.Projects = append(row.Projects, r.Project+" ("+r.Role+")")
		}
		d.People = append(d.People, row)
	}
	d.CanAdmin = canAdmin(c)
	d.Self = principal(c).User.Username
	if d.Changes, err = h.recentChanges(ctx, store.AuditFilter{ObjectTypes: []string{"user"}}); err != nil {
		h.serverError(c, err)
		return
	}
	render(c, http.StatusOK, templates.People(h.page(c, "People", "admin"), d))
}
