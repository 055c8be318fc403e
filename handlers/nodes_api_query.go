package handlers

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// A page of GET /api/v1/nodes: a node with eight GPUs is ~1.5 KB of JSON, so the
// largest page stays under a megabyte.
const (
	nodesAPIDefaultLimit = 100
	nodesAPIMaxLimit     = 500
)

// nodeCursor is the content of a nodes page's cursor: the last name it listed. Opaque
// to clients, so that the list may one day be ordered otherwise.
type nodeCursor struct {
	After string `json:"after"`
}

// nodesAPIQuery reads GET /api/v1/nodes' limit, cursor, state (repeated or
// comma-separated), name (a part of it, any letter case), pool (a name) and
// include_removed; bad input is a *models.FieldError naming the parameter.
func (h *Handler) nodesAPIQuery(c *gin.Context) (store.NodeFilter, error) {
	f := store.NodeFilter{Limit: nodesAPIDefaultLimit, Name: c.Query("name")}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > nodesAPIMaxLimit {
			return f, models.Invalid("limit", "%q is not a page size: a whole number from 1 to %d", v, nodesAPIMaxLimit)
		}
		f.Limit = n
	}
	if v := c.Query("cursor"); v != "" {
		var cur nodeCursor
		b, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil || json.Unmarshal(b, &cur) != nil || cur.After == "" || strings.ContainsRune(cur.After, 0) {
			return f, models.Invalid("cursor", "is not a cursor of this list: pass next_cursor of the page before unchanged, or leave it out for the first page")
		}
		f.After = cur.After
	}
	if strings.ContainsRune(f.Name, 0) {
		return f, models.Invalid("name", "holds a NUL character, which no node name has")
	}
	for _, vs := range c.QueryArray("state") {
		for st := range strings.SplitSeq(vs, ",") {
			if st = strings.TrimSpace(st); st == "" {
				continue
			}
			if !slices.Contains(models.NodeStates, st) {
				return f, models.Invalid("state", "%q is not a node state: one of %s", st, strings.Join(models.NodeStates, ", "))
			}
			f.States = append(f.States, st)
		}
	}
	if v := c.Query("pool"); v != "" {
		p, err := h.store.NodePoolByName(c.Request.Context(), v)
		if errors.Is(err, store.ErrNotFound) {
			return f, models.Invalid("pool", "there is no pool %q", v)
		}
		if err != nil {
			return f, err
		}
		f.PoolID = p.ID
	}
	if v := c.Query("include_removed"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return f, models.Invalid("include_removed", "%q is not true or false", v)
		}
		f.WithRemoved = b
	}
	return f, nil
}

// nextNodeCursor is the cursor of the page after nodes, read one over limit to learn
// whether the list goes on: "" on the last page.
func nextNodeCursor(nodes []models.Node, limit int) ([]models.Node, string) {
	if len(nodes) <= limit {
		return nodes, ""
	}
	// A struct of one string always encodes.
	b, _ := json.Marshal(nodeCursor{After: nodes[limit-1].Name})
	return nodes[:limit], base64.RawURLEncoding.EncodeToString(b)
}
