package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/jobs"
)

// JobCreate submits a job: 201 with the job, or 400 naming the bad field.
func (h *Handler) JobCreate(c *gin.Context) {
	user := currentUser(c)
	if user == nil {
		return
	}
	spec, err := jobs.Parse(c.Request.Body)
	if err == nil {
		var j *models.Job
		if j, err = h.jobs.Submit(c.Request.Context(), user, spec); err == nil {
			v := jobView(j, spec.Project, user.Username)
			if err = h.maskSecretEnv(c.Request.Context(), &v); err == nil {
				c.JSON(http.StatusCreated, v)
				return
			}
		}
	}
	h.failed(c, err, nil)
}
