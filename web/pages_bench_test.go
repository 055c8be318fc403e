package web_test

import (
	"testing"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// BenchmarkPagesAtScale opens the portal's pages other than the jobs list, one request
// at a time, as admin, in the installation of BenchmarkJobsList (100,000 jobs, 1,000
// nodes), on SQLite and on PostgreSQL: what each costs on a big fleet.
// docs/pages-benchmark.md has the figures.
func BenchmarkPagesAtScale(b *testing.B) {
	collectAsServed(b)
	for _, backend := range storetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			cfg := backend.Config(b)
			w := newBenchWorld(b, storetest.Open(b, cfg), cfg)
			page := map[string]string{"Cookie": handlers.SessionCookie + "=" + w.session}
			live := map[string]string{"Cookie": page["Cookie"], "HX-Request": "true"}
			for _, p := range []struct {
				name, path string
				header     map[string]string
			}{
				{"home", "/", page}, {"cluster", "/cluster", page}, {"cluster-live", "/cluster", live}, {"images", "/images", page},
				{"cost", "/cost", page}, {"submit-form", "/jobs/new", page}, {"admin-nodes", "/admin/nodes", page},
				{"admin-people", "/admin/people", page}, {"api-nodes", "/api/v1/nodes", page},
			} {
				b.Run(p.name, func(b *testing.B) {
					var size int
					for b.Loop() {
						size = len(w.get(b, p.path, p.header))
					}
					b.ReportMetric(float64(size)/1024, "KiB/page")
				})
			}
		})
	}
}
