package exporter_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry/exporter"
)

// BenchmarkScrapeFleet scrapes /metrics of a 1,000-node fleet of 8 GPUs each with two
// minutes of raw samples stored (64,000 rows, 8 per GPU), as Prometheus does every 15 s.
// It reports the share of that interval one scrape takes, and this process's CPU time
// per scrape (for PostgreSQL the server's own CPU is not included).
func BenchmarkScrapeFleet(b *testing.B) {
	for _, backend := range storetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			ctx := context.Background()
			s := storetest.Open(b, backend.Config(b))
			const nodes, gpus = 1000, 8
			var rows []models.TelemetrySample
			for n := range nodes {
				node := &models.Node{Name: fmt.Sprintf("node-%04d", n), State: models.NodeReady, Labels: "{}", Runtime: "process"}
				devs := make([]models.GPUDevice, gpus)
				for g := range gpus {
					devs[g] = models.GPUDevice{Index: g, UUID: fmt.Sprintf("GPU-%04d-%d", n, g), Model: "H100-80GB", MemoryMiB: 81559, Healthy: true}
				}
				if err := s.CreateNode(ctx, node, devs); err != nil {
					b.Fatal(err)
				}
				for k := range 8 {
					at := now.Add(-time.Duration(k) * 15 * time.Second)
					for g := range gpus {
						rows = append(rows, models.TelemetrySample{NodeID: node.ID, DeviceUUID: devs[g].UUID, At: at, Resolution: models.ResolutionRaw, Samples: 1,
							Reported: models.ReportedUtil | models.ReportedMemory | models.ReportedTemperature | models.ReportedPower | models.ReportedSMClock,
							UtilPct:  50, MemUsedMiB: 1000, TempC: 60, PowerW: 300, SMClockMHz: 1980})
					}
				}
			}
			if err := s.InsertTelemetry(ctx, rows); err != nil {
				b.Fatal(err)
			}
			e := exporter.New(s, func() time.Time { return now }, exporter.Config{})
			var before, after syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			b.ResetTimer()
			for range b.N {
				rec := httptest.NewRecorder()
				e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("scrape: %d %s", rec.Code, rec.Body.String())
				}
			}
			b.StopTimer()
			syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
			b.ReportMetric((b.Elapsed()/time.Duration(b.N)).Seconds()/15, "share-of-15s")
			b.ReportMetric((cpu / time.Duration(b.N)).Seconds(), "cpu-s/scrape")
		})
	}
}
