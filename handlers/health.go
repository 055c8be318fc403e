package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// Healthz says the process is up; it touches nothing else.
func (h *Handler) Healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok", "version": h.version})
}

// Readyz says whether the database answers and its schema is current.
func (h *Handler) Readyz(c *gin.Context) {
	ctx := c.Request.Context()
	body := gin.H{"database": h.store.Dialect()}
	if err := h.store.Ping(ctx); err != nil {
		body["status"] = "unavailable"
		body["reason"] = "database unreachable: " + err.Error()
		c.JSON(http.StatusServiceUnavailable, body)
		return
	}
	st, err := h.store.SchemaStatus(ctx)
	if err != nil {
		body["status"] = "unavailable"
		body["reason"] = "schema unreadable: " + err.Error()
		c.JSON(http.StatusServiceUnavailable, body)
		return
	}
	body["schema"] = st
	if !st.Ready() {
		body["status"] = "unavailable"
		body["reason"] = "database schema is not at this binary's version: run `gantry migrate`"
		c.JSON(http.StatusServiceUnavailable, body)
		return
	}
	body["status"] = "ok"
	c.JSON(http.StatusOK, body)
}
