package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/store"
)

// usageBody is what a meter outside Gantry (a cloud bill, a storage system) reports:
// bytes a project sent out of the fleet, or held on persistent storage, over a period.
type usageBody struct {
	Resource string `json:"resource"`
	Project  string `json:"project"`
	JobID    *int64 `json:"job_id"`
	Bytes    int64  `json:"bytes"`
	// From and To are RFC 3339 times, read here so that a bad one is named.
	From string `json:"from"`
	To   string `json:"to"`
}

// UsageCreate prices egress or storage usage into the ledger: 201 with the amount
// charged, or 400 naming the field. Each call adds to the ledger: report a period once.
func (h *Handler) UsageCreate(c *gin.Context) {
	var b usageBody
	err := readJSON(c, &b, `{"resource": "egress"|"storage", "project", "job_id", "bytes", "from", "to"}, times in RFC 3339`)
	var from, to time.Time
	if err == nil {
		from, err = rfc3339("from", b.From)
	}
	if err == nil {
		to, err = rfc3339("to", b.To)
	}
	if h.failed(c, err, nil) {
		return
	}
	ctx := c.Request.Context()
	project, err := h.store.ProjectByName(ctx, b.Project)
	if errors.Is(err, store.ErrNotFound) {
		jsonError(c, http.StatusBadRequest, "invalid", "there is no project "+strconv.Quote(b.Project), "project")
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	entries, err := h.cost.RecordUsage(ctx, accounting.Usage{Resource: b.Resource, ProjectID: project.ID, JobID: b.JobID, Bytes: b.Bytes, From: from, To: to})
	if h.failed(c, err, nil) {
		return
	}
	var amount int64
	for _, e := range entries {
		amount += e.AmountMicros
	}
	c.JSON(http.StatusCreated, gin.H{"resource": b.Resource, "project": project.Name, "job_id": b.JobID, "bytes": b.Bytes,
		"from": from.UTC(), "to": to.UTC(), "amount_micros": amount, "ledger_entries": len(entries)})
}

// rfc3339 reads the time of field, or says what it must be.
func rfc3339(field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, models.Invalid(field, "%q is not an RFC 3339 time such as 2026-03-02T00:00:00Z", s)
	}
	return t, nil
}
