package telemetry

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
)

// NodeSample is the telemetry of one heartbeat of one node.
type NodeSample struct {
	NodeID int64
	Sample gpu.Sample
	// Jobs maps the UUID of a device or MIG instance to the job that holds it alone.
	// Devices that are idle, or shared by fractional jobs, are absent: their samples
	// belong to no single job.
	Jobs map[string]int64
}

// Ingest validates one heartbeat's sample and stores a raw row per device and per
// MIG instance. It stores nothing when any part is invalid (a *models.FieldError), so a node
// with a wrong clock or a broken reading never leaves garbage in the history. It
// returns how many rows it stored.
func (s *Service) Ingest(ctx context.Context, now time.Time, ns NodeSample) (int, error) {
	rows, err := s.rawRows(now, ns)
	if err != nil {
		return 0, err
	}
	if err := s.store.InsertTelemetry(ctx, rows); err != nil {
		return 0, fmt.Errorf("ingest telemetry of node %d: %w", ns.NodeID, err)
	}
	return len(rows), nil
}

// rawRows turns a node sample into raw rows, checking every field.
func (s *Service) rawRows(now time.Time, ns NodeSample) ([]models.TelemetrySample, error) {
	if ns.NodeID <= 0 {
		return nil, models.Invalid("node_id", "is %d: want the id of a registered node", ns.NodeID)
	}
	at := ns.Sample.Time.UTC()
	switch {
	case at.IsZero():
		return nil, models.Invalid("time", "is missing")
	case at.After(now.Add(s.cfg.MaxClockSkew)):
		return nil, models.Invalid("time", "%s is %s ahead of the server clock (at most %s is accepted): check the node's clock",
			at.Format(time.RFC3339), at.Sub(now).Round(time.Second), s.cfg.MaxClockSkew)
	case at.Before(now.Add(-s.cfg.RawRetention)):
		return nil, models.Invalid("time", "%s is older than the raw retention of %s", at.Format(time.RFC3339), s.cfg.RawRetention)
	}
	for uuid, job := range ns.Jobs {
		if job <= 0 {
			return nil, models.Invalid("jobs["+uuid+"]", "is %d: want a job id", job)
		}
	}
	seen := make(map[string]bool, len(ns.Sample.Devices))
	rows := make([]models.TelemetrySample, 0, len(ns.Sample.Devices))
	for i, d := range ns.Sample.Devices {
		field := fmt.Sprintf("devices[%d]", i)
		if d.UUID == "" {
			return nil, models.Invalid(field+".uuid", "is empty")
		}
		if seen[d.UUID] {
			return nil, models.Invalid(field+".uuid", "%s appears twice in one sample", d.UUID)
		}
		seen[d.UUID] = true
		row, err := deviceRow(field, d)
		if err != nil {
			return nil, err
		}
		if row.Reported != 0 || row.XIDCount > 0 {
			rows = append(rows, row)
		}
		for j, m := range d.MIG {
			mfield := fmt.Sprintf("%s.mig[%d]", field, j)
			if m.UUID == "" || seen[m.UUID] {
				return nil, models.Invalid(mfield+".uuid", "%q: want a UUID that no other device of the sample has", m.UUID)
			}
			seen[m.UUID] = true
			if m.MemoryUsedMiB == nil {
				continue
			}
			if *m.MemoryUsedMiB < 0 {
				return nil, models.Invalid(mfield+".memory_used_mib", "is %d: want 0 or more", *m.MemoryUsedMiB)
			}
			rows = append(rows, models.TelemetrySample{
				DeviceUUID: m.UUID, Reported: models.ReportedMemory,
				MemUsedMiB: *m.MemoryUsedMiB, MemMinMiB: *m.MemoryUsedMiB, MemMaxMiB: *m.MemoryUsedMiB,
			})
		}
	}
	for i := range rows {
		rows[i].NodeID, rows[i].At, rows[i].Resolution, rows[i].Samples = ns.NodeID, at, models.ResolutionRaw, 1
		if job, ok := ns.Jobs[rows[i].DeviceUUID]; ok {
			rows[i].JobID = &job
		}
	}
	return rows, nil
}

// deviceRow checks one device reading and converts it to a raw row (without node,
// time and job). Raw rows carry each gauge as its own min, avg and max.
func deviceRow(field string, d gpu.DeviceSample) (models.TelemetrySample, error) {
	r := models.TelemetrySample{DeviceUUID: d.UUID}
	bad := func(name string, v any, want string) error {
		return models.Invalid(field+"."+name, "is %v: want %s", v, want)
	}
	if v := d.UtilizationPct; v != nil {
		if *v < 0 || *v > 100 {
			return r, bad("utilization_pct", *v, "0..100")
		}
		r.Reported |= models.ReportedUtil
		r.UtilPct, r.UtilMinPct, r.UtilMaxPct = float64(*v), float64(*v), float64(*v)
	}
	if v := d.MemoryUsedMiB; v != nil {
		if *v < 0 {
			return r, bad("memory_used_mib", *v, "0 or more")
		}
		r.Reported |= models.ReportedMemory
		r.MemUsedMiB, r.MemMinMiB, r.MemMaxMiB = *v, *v, *v
	}
	if v := d.TemperatureC; v != nil {
		if *v < -40 || *v > 150 {
			return r, bad("temperature_c", *v, "-40..150")
		}
		r.Reported |= models.ReportedTemperature
		r.TempC, r.TempMinC, r.TempMaxC = float64(*v), float64(*v), float64(*v)
	}
	if v := d.PowerW; v != nil {
		if math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0 || *v > 10000 {
			return r, bad("power_w", *v, "a number of watts, 0..10000")
		}
		r.Reported |= models.ReportedPower
		r.PowerW, r.PowerMinW, r.PowerMaxW = *v, *v, *v
	}
	if v := d.SMClockMHz; v != nil {
		if *v < 0 {
			return r, bad("sm_clock_mhz", *v, "0 or more")
		}
		r.Reported |= models.ReportedSMClock
		r.SMClockMHz, r.SMClockMinMHz, r.SMClockMaxMHz = int64(*v), int64(*v), int64(*v)
	}
	if mbps, ok, err := throughput(field, "nvlink", d.NVLinkTxKiBps, d.NVLinkRxKiBps); err != nil {
		return r, err
	} else if ok {
		r.Reported |= models.ReportedNVLink
		r.NVLinkMBps, r.NVLinkMaxMBps = mbps, mbps
	}
	if mbps, ok, err := throughput(field, "pcie", d.PCIeTxKiBps, d.PCIeRxKiBps); err != nil {
		return r, err
	} else if ok {
		r.Reported |= models.ReportedPCIe
		r.PCIeMBps, r.PCIeMaxMBps = mbps, mbps
	}
	if v := d.ECCUncorrected; v != nil {
		if *v < 0 {
			return r, bad("ecc_uncorrected", *v, "0 or more")
		}
		r.Reported |= models.ReportedECC
		r.ECCErrors = *v
	}
	for _, x := range d.XIDs {
		if x <= 0 {
			return r, bad("xids", d.XIDs, "positive XID codes")
		}
	}
	r.XIDCount = int64(len(d.XIDs))
	if n := len(d.XIDs); n > 0 {
		r.LastXID = d.XIDs[n-1]
	}
	return r, nil
}

// throughput sums transmit and receive KiB/s into MB/s (10^6 bytes), the unit of the
// nvlink_mbps and pcie_mbps columns. ok is false when neither direction was reported.
func throughput(field, name string, tx, rx *int64) (mbps float64, ok bool, err error) {
	var sum int64
	for _, d := range []struct {
		dir string
		v   *int64
	}{{"tx", tx}, {"rx", rx}} {
		v := d.v
		if v == nil {
			continue
		}
		if *v < 0 {
			return 0, false, models.Invalid(field+"."+name+"_"+d.dir+"_kibps", "is %d: want 0 or more", *v)
		}
		sum += *v
		ok = true
	}
	return float64(sum) * 1024 / 1e6, ok, nil
}
