package advice

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// gib formats MiB as GiB with one decimal, e.g. "19.2 GiB".
func gib(mib int64) string { return fmt.Sprintf("%.1f GiB", float64(mib)/1024) }

// cores formats milli-cores, e.g. "8" or "0.5".
func cores(milli int64) string {
	return strconv.FormatFloat(float64(milli)/1000, 'f', -1, 64)
}

// duration formats a duration for people: "42 min", "3h12m", "2 days".
func duration(d time.Duration) string {
	switch {
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute)/time.Minute))
	case d < 48*time.Hour:
		d = d.Round(time.Minute)
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return fmt.Sprintf("%d h", h)
		}
		return fmt.Sprintf("%dh%02dm", h, m)
	}
	return fmt.Sprintf("%d days", int(d.Round(24*time.Hour)/(24*time.Hour)))
}

// short shortens a GPU UUID to what tells it apart on a page, e.g. "GPU-917f298b".
func short(uuid string) string {
	if i := strings.IndexByte(uuid, '-'); i >= 0 && len(uuid) > i+9 {
		return uuid[:i+9]
	}
	return uuid
}
