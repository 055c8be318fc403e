package handlers

import (
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"
)

// Healthz says the process is up; it touches nothing else.
func (h *Handler) Healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok", "version": h.version})
}

// Readyz says whether the database answers and its schema is current. It is public,
// so a database error goes to the server's log under the request id, never to the
// caller: the driver's words can name the database's host, user and database.
func (h *Handler) Readyz(c *gin.Context) {
	ctx := c.Request.Context()
	body := gin.H{"database": h.store.Dialect()}
	unavailable := func(reason string, err error) {
		rid := c.GetString(RequestIDKey)
		h.log.Error("not ready", slog.String("request_id", rid), slog.String("reason", reason), slog.Any("err", err))
		body["status"] = "unavailable"
		body["reason"] = reason + ": the server's log says why under request id " + rid
		c.JSON(http.StatusServiceUnavailable, body)
	}
	if err := h.store.Ping(ctx); err != nil {
		unavailable("database unreachable", err)
		return
	}
	st, err := h.store.SchemaStatus(ctx)
	if err != nil {
		unavailable("schema unreadable", err)
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
