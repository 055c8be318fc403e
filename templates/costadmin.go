package templates

import (
	"slices"
	"strconv"
	"strings"
)

// ruleAction is where a rule's form posts: a new rule, or rule id.
func ruleAction(id int64) string {
	if id == 0 {
		return "/admin/cost/rules"
	}
	return "/admin/cost/rules/" + i64toa(id)
}

// hasChannel reports whether the channel id written in value is among ids.
func hasChannel(ids []int64, value string) bool {
	id, err := strconv.ParseInt(value, 10, 64)
	return err == nil && slices.Contains(ids, id)
}

// slug makes words a class name: "in effect" → "in-effect".
func slug(s string) string { return strings.ReplaceAll(s, " ", "-") }
