package handlers

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// JobShow answers a job with its events and allocations.
func (h *Handler) JobShow(c *gin.Context) {
	if currentUser(c) == nil {
		return
	}
	j := h.jobParam(c)
	if j == nil {
		return
	}
	h.answerJob(c, j)
}

// answerJob answers 200 with j, its events and allocations.
func (h *Handler) answerJob(c *gin.Context, j *models.Job) {
	v, err := h.jobDetail(c.Request.Context(), j)
	if err != nil {
		h.serverError(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

// jobParam loads the job (the one the gate loaded, where it did) named by the :id path parameter, or answers 400/404.
func (h *Handler) jobParam(c *gin.Context) *models.Job {
	if j := routeJob(c); j != nil {
		return j
	}
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		jsonError(c, http.StatusBadRequest, "invalid", "a job id is a positive integer", "id")
		return nil
	}
	j, err := h.jobs.Job(c.Request.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		jsonError(c, http.StatusNotFound, "not_found", "there is no job "+c.Param("id"), "id")
		return nil
	}
	if err != nil {
		h.serverError(c, err)
		return nil
	}
	return j
}
