package store

import (
	"fmt"
	"time"
)

// dbTime scans a timestamp that an aggregate returns: a time on PostgreSQL, but text on
// SQLite, where MAX() and MIN() lose the column's declared type.
type dbTime time.Time

// sqliteTimeLayouts are the forms the SQLite driver writes times in.
var sqliteTimeLayouts = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02T15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999",
	time.RFC3339Nano,
}

// Scan implements sql.Scanner.
func (t *dbTime) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*t = dbTime{}
		return nil
	case time.Time:
		*t = dbTime(x.UTC())
		return nil
	case string:
		return t.parse(x)
	case []byte:
		return t.parse(string(x))
	}
	return fmt.Errorf("scan time: unexpected %T", v)
}

func (t *dbTime) parse(s string) error {
	for _, layout := range sqliteTimeLayouts {
		if p, err := time.Parse(layout, s); err == nil {
			*t = dbTime(p.UTC())
			return nil
		}
	}
	return fmt.Errorf("scan time: cannot read %q", s)
}
