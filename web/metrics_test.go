package web_test

import (
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// Prometheus scrapes /metrics without signing in and gets the text format.
func TestMetricsArePublic(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		srv := newServer(t, st)
		res, body := get(t, srv.URL+"/metrics")
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("/metrics = %d %s", res.StatusCode, res.Header.Get("Content-Type"))
		}
		for _, want := range []string{`gantry_jobs{state="queued"} 0`, "gantry_gpus_total 0", "# TYPE gantry_scheduler_cycle_seconds histogram"} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
	})
}
