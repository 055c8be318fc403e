package handlers

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/templates"
)

// NodeLabelsUpdate replaces a node's labels with the form's key=value lines.
func (h *Handler) NodeLabelsUpdate(c *gin.Context) {
	text := c.PostForm("labels")
	labels, err := parseLabels(text)
	if err == nil {
		_, err = h.dispatch.SetNodeLabels(c.Request.Context(), c.Param("name"), labels)
	}
	if h.nodeActionFailed(c, err, func(fe *models.FieldError) {
		h.renderNodeAdmin(c, http.StatusBadRequest, templates.NodeAdminData{Error: fieldMessage(fe), Field: fe.Field}, &text)
	}) {
		return
	}
	redirectNotice(c, "/admin/nodes/"+c.Param("name"), fmt.Sprintf("Saved %d labels.", len(labels)))
}

// parseLabels reads one key=value a line; blank lines are skipped.
func parseLabels(text string) (map[string]string, error) {
	out := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, models.Invalid("labels", "line %d (%q) is not key=value", i+1, line)
		}
		k = strings.TrimSpace(k)
		if _, dup := out[k]; dup {
			return nil, models.Invalid("labels", "%s is given twice", k)
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, nil
}
