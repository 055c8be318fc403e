package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/strictjson"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// JobMetricsCreate stores the metrics and checkpoint events a running job reports
// with its job token: {"points": [{"step", "time", "values": {...}}], "checkpoints": [{"step"}]}.
func (h *Handler) JobMetricsCreate(c *gin.Context, caller *dispatch.JobCaller) {
	var b telemetry.MetricBatch
	body, err := io.ReadAll(c.Request.Body)
	if err == nil {
		err = strictjson.Check(body, &b)
	}
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		err = dec.Decode(&b)
	}
	var fe *models.FieldError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &fe):
		jsonError(c, http.StatusBadRequest, "invalid", fe.Message, fe.Field)
		return
	case errors.As(err, &tooBig):
		jsonError(c, http.StatusRequestEntityTooLarge, "too_large", "the body is over 1 MiB: send several smaller batches", "body")
		return
	case err != nil:
		msg := "the body is not a metrics batch: " + err.Error()
		if strings.Contains(err.Error(), "invalid character 'N'") || strings.Contains(err.Error(), "invalid character 'I'") {
			msg += " (NaN and Infinity are not JSON numbers: send finite values only)"
		}
		jsonError(c, http.StatusBadRequest, "malformed", msg, "body")
		return
	}
	res, err := h.dispatch.RecordJobMetrics(c.Request.Context(), caller, b)
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
