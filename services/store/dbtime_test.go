package store

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// parseStoredTime must read exactly what time.Parse reads with the stored form's
// layout, to the same instant in UTC, and refuse the rest, which parse reads as before.
func checkStoredTime(t *testing.T, s string) {
	t.Helper()
	want, err := time.Parse(sqliteTimeLayouts[0], s)
	got, ok := parseStoredTime(s)
	if ok && (err != nil || got != want.UTC()) {
		t.Errorf("parseStoredTime(%q) = %v; time.Parse: %v, %v", s, got, want.UTC(), err)
	}
	var d dbTime
	if perr := d.parse(s); ok && perr != nil {
		t.Errorf("dbTime.parse(%q): %v", s, perr)
	}
}

func TestParseStoredTimeAgreesWithTimeParse(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"2026-03-04 05:06:07.123456789+00:00", "2026-03-04 07:06:08+02:00", "2026-03-04 05:06:10.5+00:00",
		"2026-03-04 05:06:07-05:30", "2024-02-29 23:59:59.999999999-23:59", "0000-01-01 00:00:00+00:00",
		"9999-12-31 23:59:59.000000001+14:00", "2026-03-04 05:06:07.1234567891+00:00", "2025-02-29 00:00:00+00:00",
		"2026-04-31 00:00:00+00:00", "2026-03-04 24:00:00+00:00", "2026-03-04 05:06:60+00:00", "2026-13-04 05:06:07+00:00",
		"2026-03-04 05:06:07.+00:00", "2026-03-04 05:06:07,5+00:00", "2026-03-04 5:06:07+00:00", "2026-03-04T05:06:07+00:00",
		"2026-03-04 05:06:07Z", "2026-03-04 05:06:07+0000", "2026-03-04 05:06:07+24:00", "2026-03-04 05:06:07+01:60",
		"2026-03-04 05:06:07.5", "2026-03-04 05:06:07+00:00 ", "+026-03-04 05:06:07+00:00", "2026-03-04 05:06:07.5x+00:00",
		"1900-02-29 00:00:00+00:00", "2000-02-29 00:00:00+00:00", "",
	} {
		checkStoredTime(t, s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		at := time.Unix(r.Int64N(400*365*86400)-100*365*86400, r.Int64N(1e9)).In(time.FixedZone("", (r.IntN(2*24*60-1)-(24*60-1))*60))
		s := at.Format(sqliteTimeLayouts[0])
		if got, ok := parseStoredTime(s); !ok || got != at.UTC() {
			t.Fatalf("parseStoredTime(%q) = %v, %v; want %v", s, got, ok, at.UTC())
		}
		// One byte changed: read as time.Parse reads it, or refused.
		b := []byte(s)
		b[r.IntN(len(b))] = "0123456789+-:. TZ,"[r.IntN(18)]
		checkStoredTime(t, string(b))
		checkStoredTime(t, strings.Replace(s, ":", "", 1))
	}
}

func FuzzParseStoredTime(f *testing.F) {
	f.Add("2026-03-04 05:06:07.123456789+00:00")
	f.Add("2026-03-04 07:06:08+02:00")
	f.Fuzz(checkStoredTime)
}
