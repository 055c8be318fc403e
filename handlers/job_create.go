package handlers

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/jobs"
)

// JobCreate submits a job: 201 with the job, or 400 naming the bad field. With an
// Idempotency-Key header, the same request sent again gets the job the first queued
// (201, Idempotent-Replayed: true) instead of queuing another.
func (h *Handler) JobCreate(c *gin.Context) {
	user := currentUser(c)
	if user == nil {
		return
	}
	body := sha256.New()
	spec, err := jobs.Parse(io.TeeReader(c.Request.Body, body))
	if err == nil {
		var j *models.Job
		created := true
		if key, ok := c.Request.Header[jobs.SubmitKeyField]; ok {
			j, created, err = h.jobs.SubmitOnce(c.Request.Context(), user, spec, key[0], hex.EncodeToString(body.Sum(nil)))
		} else {
			j, err = h.jobs.Submit(c.Request.Context(), user, spec)
		}
		if err == nil {
			v := jobView(j, spec.Project, user.Username)
			if err = h.nameImage(c.Request.Context(), j, &v); err == nil {
				err = h.maskSecretEnv(c.Request.Context(), &v)
			}
			if err == nil {
				if !created {
					c.Header("Idempotent-Replayed", "true")
				}
				c.JSON(http.StatusCreated, v)
				return
			}
		}
	}
	h.failed(c, err, nil)
}
