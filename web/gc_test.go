package web_test

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/gantry-gpu/gantry/web"
)

// gcNow reads the collector's percent and memory limit without changing them.
func gcNow() (int, int64) {
	percent := debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

func TestTuneGCKeepsWhatTheOperatorSet(t *testing.T) {
	dir := t.TempDir()
	max := filepath.Join(dir, "memory.max")
	if err := os.WriteFile(max, []byte("2147483648\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	percent, limit := gcNow()
	cases := []struct {
		name        string
		env         map[string]string
		memoryMax   string
		wantPercent int
		wantLimit   int64
		want        string
	}{
		{"nothing set, no cgroup", nil, filepath.Join(dir, "missing"), web.ServeGCPercent, limit, "GOGC=400, memory limit none"},
		{"nothing set, a cgroup of 2 GiB", nil, max, web.ServeGCPercent, 1932735283, "GOGC=400, memory limit 1843 MiB"},
		{"GOGC and GOMEMLIMIT set", map[string]string{"GOGC": "150", "GOMEMLIMIT": "1GiB"}, max, percent, limit, "GOGC as set, memory limit none"},
		{"GOGC off", map[string]string{"GOGC": "off"}, max, percent, 1932735283, "GOGC as set, memory limit 1843 MiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set, restore := web.TuneGC(func(k string) string { return c.env[k] }, c.memoryMax)
			gotPercent, gotLimit := gcNow()
			restore()
			if gotPercent != c.wantPercent || gotLimit != c.wantLimit || set.String() != c.want {
				t.Errorf("TuneGC = %q, percent %d, limit %d; want %q, %d, %d", set, gotPercent, gotLimit, c.want, c.wantPercent, c.wantLimit)
			}
			if p, l := gcNow(); p != percent || l != limit {
				t.Errorf("restore left percent %d, limit %d; want %d, %d", p, l, percent, limit)
			}
		})
	}
}

func TestTuneGCReadsNoLimitFromAnUnlimitedOrUnreadableGroup(t *testing.T) {
	dir := t.TempDir()
	_, before := gcNow()
	for _, content := range []string{"max\n", "", "-1\n", "lots\n"} {
		path := filepath.Join(dir, "memory.max")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		set, restore := web.TuneGC(func(string) string { return "" }, path)
		_, limit := gcNow()
		restore()
		if set.MemoryLimit != 0 || limit != before {
			t.Errorf("memory.max %q: set %d, runtime limit %d; want none", content, set.MemoryLimit, limit)
		}
	}
}
