package handlers

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// openAPIDocument is the OpenAPI 3 description of /api/v1, written by hand next to
// the handlers; web's tests check it against the route table.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPIShow serves the OpenAPI document.
func (h *Handler) OpenAPIShow(c *gin.Context) {
	c.Data(http.StatusOK, "application/json", openAPIDocument)
}
