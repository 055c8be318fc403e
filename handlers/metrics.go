package handlers

import "github.com/gin-gonic/gin"

// Metrics answers a Prometheus scrape with the exporter's metrics.
func (h *Handler) Metrics(c *gin.Context) {
	if h.metrics == nil {
		h.NotFound(c)
		return
	}
	h.metrics.ServeHTTP(c.Writer, c.Request)
}
