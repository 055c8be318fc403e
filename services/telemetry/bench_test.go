package telemetry_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// targetSamplesPerSec is the fleet ingest must keep up with: 1,000 nodes × 8 GPUs
// reporting every 15 s.
const targetSamplesPerSec = 1000 * 8 / 15.0

// BenchmarkIngest stores heartbeats of a 1,000-node fleet of 8 GPUs, one node's
// heartbeat per Ingest call as the agent API will, half the GPUs on a job. It
// reports samples/s, the ratio to the fleet's 533 samples/s, and this process's CPU
// time per 1,000 samples (for PostgreSQL the server's own CPU is not included).
func BenchmarkIngest(b *testing.B) {
	for _, backend := range storetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			ctx := context.Background()
			s := storetest.Open(b, backend.Config(b))
			u := &models.User{Username: "ada", Email: "ada@example.com"}
			team := &models.Team{Name: "vision"}
			if err := s.CreateUser(ctx, u); err != nil {
				b.Fatal(err)
			}
			if err := s.CreateTeam(ctx, team); err != nil {
				b.Fatal(err)
			}
			p := &models.Project{TeamID: team.ID, Name: "detect"}
			if err := s.CreateProject(ctx, p); err != nil {
				b.Fatal(err)
			}
			job := &models.Job{Name: "train", ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research", GPUs: 4}
			if err := s.CreateJob(ctx, job, "user:ada"); err != nil {
				b.Fatal(err)
			}
			const nodes, gpus = 1000, 8
			nodeIDs := make([]int64, nodes)
			for i := range nodes {
				n := &models.Node{Name: fmt.Sprintf("node-%04d", i), State: "ready", Labels: "{}", Runtime: "process"}
				if err := s.CreateNode(ctx, n, nil); err != nil {
					b.Fatal(err)
				}
				nodeIDs[i] = n.ID
			}
			svc, err := telemetry.New(s, telemetry.Config{})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
			heartbeat := func(i int) telemetry.NodeSample {
				node := i % nodes
				when := start.Add(time.Duration(i/nodes) * 15 * time.Second)
				ns := telemetry.NodeSample{NodeID: nodeIDs[node], Sample: gpu.Sample{Time: when}, Jobs: map[string]int64{}}
				for g := range gpus {
					uuid := fmt.Sprintf("GPU-%04d-%d", node, g)
					ns.Sample.Devices = append(ns.Sample.Devices, gpu.DeviceSample{
						Index: g, UUID: uuid, UtilizationPct: ptr((i + g) % 101), MemoryUsedMiB: ptr(int64(1000 + i%5000)),
						TemperatureC: ptr(40 + g), PowerW: ptr(250.5), SMClockMHz: ptr(1410),
						NVLinkTxKiBps: ptr(int64(1 << 20)), NVLinkRxKiBps: ptr(int64(1 << 20)),
						PCIeTxKiBps: ptr(int64(1 << 10)), PCIeRxKiBps: ptr(int64(1 << 12)),
						ECCCorrected: ptr(int64(0)), ECCUncorrected: ptr(int64(0)),
					})
					if g < gpus/2 {
						ns.Jobs[uuid] = job.ID
					}
				}
				return ns
			}
			var before syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			b.ResetTimer()
			for i := range b.N {
				ns := heartbeat(i)
				if _, err := svc.Ingest(ctx, ns.Sample.Time, ns); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			var after syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			samples := float64(b.N * gpus)
			perSec := samples / b.Elapsed().Seconds()
			cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
			b.ReportMetric(perSec, "samples/s")
			b.ReportMetric(perSec/targetSamplesPerSec, "x-fleet-target")
			b.ReportMetric(cpu.Seconds()*1000/samples, "cpu-s/1k-samples")
		})
	}
}

// BenchmarkRollupFleetMinute rolls up one minute of the 1,000-node fleet (8,000 GPUs,
// 4 samples each: 32,000 raw rows) per iteration, as the leader's Maintain does every
// minute. It reports raw rows rolled up per second and the ratio to the 533 rows/s
// the fleet produces.
func BenchmarkRollupFleetMinute(b *testing.B) {
	for _, backend := range storetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			ctx := context.Background()
			s := storetest.Open(b, backend.Config(b))
			const nodes, gpus = 1000, 8
			nodeIDs := make([]int64, nodes)
			for i := range nodes {
				n := &models.Node{Name: fmt.Sprintf("node-%04d", i), State: "ready", Labels: "{}", Runtime: "process"}
				if err := s.CreateNode(ctx, n, nil); err != nil {
					b.Fatal(err)
				}
				nodeIDs[i] = n.ID
			}
			svc, err := telemetry.New(s, telemetry.Config{})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
			minute := func(m int) []models.TelemetrySample {
				rows := make([]models.TelemetrySample, 0, nodes*gpus*4)
				for k := range 4 {
					at := start.Add(time.Duration(m)*time.Minute + time.Duration(k)*15*time.Second)
					for n := range nodes {
						for g := range gpus {
							v := float64((n + g + k) % 101)
							rows = append(rows, models.TelemetrySample{
								NodeID: nodeIDs[n], DeviceUUID: fmt.Sprintf("GPU-%04d-%d", n, g), At: at, Resolution: models.ResolutionRaw, Samples: 1,
								Reported: models.ReportedUtil | models.ReportedMemory | models.ReportedPower,
								UtilPct:  v, UtilMinPct: v, UtilMaxPct: v, MemUsedMiB: 1000, MemMinMiB: 1000, MemMaxMiB: 1000,
								PowerW: 250, PowerMinW: 250, PowerMaxW: 250,
							})
						}
					}
				}
				return rows
			}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				if err := s.InsertTelemetry(ctx, minute(i)); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res, err := svc.Rollup(ctx, start.Add(time.Duration(i+1)*time.Minute+svc.Config().Grace))
				if err != nil {
					b.Fatal(err)
				}
				if res.MinuteRows != nodes*gpus {
					b.Fatalf("rolled up %d minute rows, want %d", res.MinuteRows, nodes*gpus)
				}
			}
			b.StopTimer()
			perSec := float64(b.N*nodes*gpus*4) / b.Elapsed().Seconds()
			b.ReportMetric(perSec, "raw-rows/s")
			b.ReportMetric(perSec/targetSamplesPerSec, "x-fleet-target")
		})
	}
}
