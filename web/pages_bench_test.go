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
	for _, backend := range storetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			cfg := backend.Config(b)
			w := newBenchWorld(b, storetest.Open(b, cfg), cfg)
			page := map[string]string{"Cookie": handlers.SessionCookie + "=" + w.session}
			for _, p := range []struct{ name, path string }{
				{"home", "/"}, {"cluster", "/cluster"}, {"images", "/images"}, {"cost", "/cost"}, {"submit-form", "/jobs/new"},
				{"admin-nodes", "/admin/nodes"}, {"admin-people", "/admin/people"}, {"api-nodes", "/api/v1/nodes"},
			} {
				b.Run(p.name, func(b *testing.B) {
					for b.Loop() {
						w.get(b, p.path, page)
					}
				})
			}
		})
	}
}
