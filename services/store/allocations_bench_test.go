package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// BenchmarkActiveAllocationReads reads the 10,000 allocations that are not ended among
// 1,000,000 (each job on its hundredth attempt, the 99 before it ended, as the table
// keeps them), on SQLite and PostgreSQL, with the indexes of migration 0041 and then
// without them: what each scheduling pass (with their jobs), the cluster page (their
// GPUs) and the nodes console (a count by node) read.
//
//	go test ./services/store/ -run '^$' -bench BenchmarkActiveAllocationReads -benchtime 20x
func BenchmarkActiveAllocationReads(b *testing.B) {
	const jobs, attempts = 10_000, 100
	for _, backend := range storetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			cfg := backend.Config(b)
			s := storetest.Open(b, cfg)
			ctx := context.Background()
			seedJobs(b, cfg, s, jobs)
			node := &models.Node{Name: "n1", State: models.NodeReady}
			if err := s.CreateNode(ctx, node, nil); err != nil {
				b.Fatal(err)
			}
			seed := `INSERT INTO allocations (job_id, attempt, node_id, devices, gpu_milli, cpu_milli, memory_mib, state, created_at, updated_at)
				SELECT j.id, a.n, $1, '[{"uuid":"GPU-0","milli":1000}]', 1000, 8000, 65536,
				CASE WHEN a.n = $2 THEN 'running' ELSE 'ended' END, $3, $3 FROM jobs j, `
			if cfg.DatabaseURL == "" {
				seed += `(WITH RECURSIVE a(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM a WHERE n < $2) SELECT n FROM a) a`
			} else {
				seed += `generate_series(1, $2::int) AS a(n)`
			}
			db, err := storetest.SQL(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			start := time.Now()
			if _, err := db.Exec(seed, node.ID, attempts, time.Now().UTC()); err != nil {
				b.Fatal(err)
			}
			if _, err := db.Exec("ANALYZE"); err != nil {
				b.Fatal(err)
			}
			b.Logf("%d allocations, %d of them active, written in %s", jobs*attempts, jobs, time.Since(start).Round(time.Millisecond))
			reads := []struct {
				name string
				read func() (int, error)
			}{
				{"with-jobs", func() (int, error) { r, err := s.ActiveAllocationsWithJobs(ctx); return len(r), err }},
				{"devices", func() (int, error) { r, err := s.ActiveAllocationDevices(ctx); return len(r), err }},
				{"counts", func() (int, error) { r, err := s.ActiveAllocationCounts(ctx); return r[node.ID], err }},
			}
			run := func(prefix string) {
				for _, r := range reads {
					b.Run(prefix+r.name, func(b *testing.B) {
						for b.Loop() {
							if n, err := r.read(); err != nil || n != jobs {
								b.Fatalf("%d active, %v", n, err)
							}
						}
					})
				}
			}
			run("")
			storetest.Exec(b, cfg, "DROP INDEX allocations_active")
			storetest.Exec(b, cfg, "DROP INDEX allocations_active_node")
			run("without-0041/")
		})
	}
}
