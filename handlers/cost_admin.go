package handlers

import (
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
)

// paramID reads the route's :id; ok is false when it is not a positive number.
func paramID(c *gin.Context) (int64, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	return id, err == nil && id > 0
}

// parsePercents reads "50, 80, 100" into percentages; empty is nil (the defaults).
func parsePercents(field, s string) ([]int, error) {
	var out []int
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '%' }) {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, models.Invalid(field, "%q is not a whole percentage: list numbers such as 50, 80, 100", part)
		}
		out = append(out, n)
	}
	return out, nil
}

// percents writes percentages as the form reads them back.
func percents(ts []int) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = strconv.Itoa(t)
	}
	return strings.Join(parts, ", ")
}
