package store

import (
	"strconv"

	"gorm.io/gorm/clause"
)

// literalLimit writes a query's LIMIT and OFFSET as numbers rather than parameters,
// as gorm's SQLite dialect already does. PostgreSQL plans a prepared statement whose
// LIMIT is a parameter afresh at every execution (its generic plan cannot know the
// limit, so it never looks cheaper than a custom one): that planning was most of
// PostgreSQL's time on a jobs list page. The values are ints, so nothing is injected.
func literalLimit(c clause.Clause, b clause.Builder) {
	limit, ok := c.Expression.(clause.Limit)
	if !ok {
		c.Build(b)
		return
	}
	hasLimit := limit.Limit != nil && *limit.Limit >= 0
	if hasLimit {
		b.WriteString("LIMIT " + strconv.Itoa(*limit.Limit))
	}
	if limit.Offset > 0 {
		if hasLimit {
			b.WriteByte(' ')
		}
		b.WriteString("OFFSET " + strconv.Itoa(limit.Offset))
	}
}
