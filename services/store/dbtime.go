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
	if p, ok := parseStoredTime(s); ok {
		*t = dbTime(p)
		return nil
	}
	for _, layout := range sqliteTimeLayouts {
		if p, err := time.Parse(layout, s); err == nil {
			*t = dbTime(p.UTC())
			return nil
		}
	}
	return fmt.Errorf("scan time: cannot read %q", s)
}

// parseStoredTime reads a time in the stored form ("2006-01-02 15:04:05.999999999-07:00",
// the first of sqliteTimeLayouts) in UTC, as time.Parse would, without walking the
// layout: time.Parse was most of reading a list row's times back. ok is false for
// any other text, which parse then hands to time.Parse: this takes only two-digit
// fields, a fraction of 1 to 9 digits after a period, and an offset within ±23:59.
func parseStoredTime(s string) (t time.Time, ok bool) {
	if len(s) < len("2006-01-02 15:04:05-07:00") || s[4] != '-' || s[7] != '-' || s[10] != ' ' ||
		s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || month < 1 || month > 12 || day < 1 ||
		day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	rest, nsec := s[19:], 0
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && n <= 9 && rest[n] >= '0' && rest[n] <= '9' {
			nsec = nsec*10 + int(rest[n]-'0')
			n++
		}
		if n == 1 || n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			return time.Time{}, false
		}
		for range 10 - n {
			nsec *= 10
		}
		rest = rest[n:]
	}
	if len(rest) != len("-07:00") || rest[0] != '+' && rest[0] != '-' || rest[3] != ':' {
		return time.Time{}, false
	}
	offHour, ok1 := digits(rest[1:3])
	offMinute, ok2 := digits(rest[4:6])
	if !ok1 || !ok2 || offHour > 23 || offMinute > 59 {
		return time.Time{}, false
	}
	offset := time.Duration(offHour)*time.Hour + time.Duration(offMinute)*time.Minute
	if rest[0] == '-' {
		offset = -offset
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC).Add(-offset), true
}

// digits is the decimal number that s spells, digits only.
func digits(s string) (n int, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// daysIn is the number of days of month in year (proleptic Gregorian, as time has it).
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
