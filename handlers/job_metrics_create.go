package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// JobMetricsCreate stores the metrics and checkpoint events a running job reports
// with its job token: {"points": [{"step", "time", "values": {...}}], "checkpoints": [{"step"}]}.
func (h *Handler) JobMetricsCreate(c *gin.Context, caller *dispatch.JobCaller) {
	var b telemetry.MetricBatch
	dec := json.NewDecoder(c.Request.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		var tooBig *http.MaxBytesError
		msg := "the body is not a metrics batch: " + err.Error()
		switch {
		case errors.As(err, &tooBig):
			jsonError(c, http.StatusRequestEntityTooLarge, "too_large", "the body is over 1 MiB: send several smaller batches", "body")
			return
		case strings.Contains(err.Error(), "invalid character 'N'") || strings.Contains(err.Error(), "invalid character 'I'"):
			msg += " (NaN and Infinity are not JSON numbers: send finite values only)"
		}
		jsonError(c, http.StatusBadRequest, "malformed", msg, "body")
		return
	}
	res, err := h.dispatch.RecordJobMetrics(c.Request.Context(), caller, b)
	var fe *models.FieldError
	switch {
	case errors.As(err, &fe):
		jsonError(c, http.StatusBadRequest, "invalid", fe.Error(), fe.Field)
	case errors.Is(err, telemetry.ErrJobNotRunning):
		jsonError(c, http.StatusConflict, "not_running", err.Error(), "")
	case errors.Is(err, dispatch.ErrNoTelemetry):
		jsonError(c, http.StatusServiceUnavailable, "unavailable", "This server keeps no job metrics.", "")
	case err != nil:
		h.serverError(c, err)
	default:
		c.JSON(http.StatusOK, res)
	}
}
