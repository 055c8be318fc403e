package telemetry

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// Health event kinds.
const (
	EventXID     = "xid"
	EventECC     = "ecc"
	EventThermal = "thermal"
)

// maxHealthEvents bounds the events a node's history lists, newest kept.
const maxHealthEvents = 200

// NodeHistory is what a node's page charts: the history of each of its GPUs (and MIG
// instances) from..to, and the health events in it, newest first.
type NodeHistory struct {
	From, To   time.Time
	Resolution string
	GPUs       []DeviceSeries
	Events     []HealthEvent
}

// HealthEvent is one thing that went wrong with a GPU: an XID error, uncorrected ECC
// errors that rose, or a stretch at or above the thermal threshold.
type HealthEvent struct {
	At         time.Time
	DeviceUUID string
	Kind       string
	Detail     string
}

// NodeHistory reads the history of the devices uuids (a node's GPUs and MIG
// instances) from..to, at the resolution that suits the span (see ResolutionFor),
// and the health events in it; hotC is the temperature a thermal event starts at.
func (s *Service) NodeHistory(ctx context.Context, uuids []string, from, to, now time.Time, hotC float64) (NodeHistory, error) {
	if !from.Before(to) {
		return NodeHistory{}, models.Invalid("from", "%s is not before to (%s)", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	out := NodeHistory{From: from.UTC(), To: to.UTC(), Resolution: s.ResolutionFor(from, to, now)}
	for _, uuid := range uuids {
		rows, err := s.store.Telemetry(ctx, store.TelemetryFilter{DeviceUUID: uuid, Resolution: out.Resolution, From: from, To: to, Limit: maxHistoryRows})
		if err != nil {
			return NodeHistory{}, fmt.Errorf("history of GPU %s: %w", uuid, err)
		}
		if len(rows) > 0 {
			out.GPUs = append(out.GPUs, DeviceSeries{UUID: uuid, Samples: rows})
		}
	}
	out.Events = HealthEvents(out.GPUs, hotC)
	return out, nil
}

// HealthEvents finds, in each device's samples (oldest first), its XID errors, the
// samples where its count of uncorrected ECC errors rose (or first showed any), and
// its stretches at hotC or above, each stretch one event at its start that says its
// peak and how long it lasted. Newest first, at most maxHealthEvents.
func HealthEvents(gpus []DeviceSeries, hotC float64) []HealthEvent {
	var out []HealthEvent
	for _, g := range gpus {
		ecc, eccSeen := int64(0), false
		var hot *HealthEvent
		var hotPeak float64
		var hotLast time.Time
		endHot := func() {
			if hot == nil {
				return
			}
			hot.Detail = fmt.Sprintf("%.0f °C at its hottest, %.0f °C or more", hotPeak, hotC)
			if span := hotLast.Sub(hot.At); span > 0 {
				hot.Detail += fmt.Sprintf(" for %s (until %s UTC)", span.Round(time.Second), hotLast.Format("15:04:05"))
			} else {
				hot.Detail += " in one sample"
			}
			out = append(out, *hot)
			hot = nil
		}
		for _, smp := range g.Samples {
			if smp.XIDCount > 0 {
				detail := fmt.Sprintf("XID %d: %s", smp.LastXID, xidMeaning(smp.LastXID))
				if smp.XIDCount > 1 {
					detail = fmt.Sprintf("%d XID errors, the last XID %d: %s", smp.XIDCount, smp.LastXID, xidMeaning(smp.LastXID))
				}
				out = append(out, HealthEvent{At: smp.At, DeviceUUID: g.UUID, Kind: EventXID, Detail: detail})
			}
			if smp.Reported&models.ReportedECC != 0 {
				switch {
				case !eccSeen && smp.ECCErrors > 0:
					out = append(out, HealthEvent{At: smp.At, DeviceUUID: g.UUID, Kind: EventECC,
						Detail: fmt.Sprintf("uncorrected ECC errors since the driver loaded: %d", smp.ECCErrors)})
				case eccSeen && smp.ECCErrors > ecc:
					out = append(out, HealthEvent{At: smp.At, DeviceUUID: g.UUID, Kind: EventECC,
						Detail: fmt.Sprintf("uncorrected ECC errors rose from %d to %d", ecc, smp.ECCErrors)})
				}
				ecc, eccSeen = smp.ECCErrors, true
			}
			if smp.Reported&models.ReportedTemperature == 0 {
				continue
			}
			if smp.TempMaxC < hotC {
				endHot()
				continue
			}
			if hot == nil {
				hot = &HealthEvent{At: smp.At, DeviceUUID: g.UUID, Kind: EventThermal}
				hotPeak = 0
			}
			hotPeak, hotLast = max(hotPeak, smp.TempMaxC), smp.At
		}
		endHot()
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.After(out[j].At)
		}
		return out[i].DeviceUUID < out[j].DeviceUUID
	})
	return out[:min(len(out), maxHealthEvents)]
}

// xidMeaning says what common XID codes mean, after NVIDIA's XID catalogue.
func xidMeaning(code int) string {
	switch code {
	case 13:
		return "graphics engine exception (often an application fault)"
	case 31:
		return "GPU memory page fault (often an application fault)"
	case 43:
		return "GPU stopped processing"
	case 45:
		return "preemptive cleanup after an earlier error"
	case 48:
		return "double-bit ECC error"
	case 61, 62:
		return "internal micro-controller error"
	case 63, 64:
		return "ECC page retirement or row remapping"
	case 74:
		return "NVLink error"
	case 79:
		return "GPU has fallen off the bus"
	case 92:
		return "high single-bit ECC error rate"
	case 94:
		return "contained ECC error"
	case 95:
		return "uncontained ECC error"
	}
	return "see NVIDIA's XID catalogue"
}
