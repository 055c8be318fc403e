package telemetry

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// level is one step of down-sampling: rows of resolution from become rows of
// resolution to, one per device, job and window of width; chunk bounds how much
// source time one pass reads (and so the memory it holds).
type level struct {
	from, to string
	width    time.Duration
	chunk    time.Duration
}

var (
	minuteLevel = level{models.ResolutionRaw, models.ResolutionMinute, time.Minute, 5 * time.Minute}
	hourLevel   = level{models.ResolutionMinute, models.ResolutionHour, time.Hour, time.Hour}
)

// RollupResult says what one Rollup wrote. A watermark is the time before which
// every source row has been rolled up.
type RollupResult struct {
	MinuteRows, HourRows           int
	MinuteWatermark, HourWatermark time.Time
}

// Rollup rolls raw samples up into 1-minute rows, and 1-minute rows into 1-hour rows,
// for every complete window that ended at least Grace before now and is not rolled
// up yet. It resumes after the newest roll-up row, so calling it again is harmless.
func (s *Service) Rollup(ctx context.Context, now time.Time) (RollupResult, error) {
	var res RollupResult
	var err error
	limit := now.UTC().Add(-s.cfg.Grace)
	if res.MinuteRows, res.MinuteWatermark, err = s.rollLevel(ctx, minuteLevel, limit); err != nil {
		return res, err
	}
	if res.MinuteWatermark.Before(limit) {
		limit = res.MinuteWatermark
	}
	if res.HourRows, res.HourWatermark, err = s.rollLevel(ctx, hourLevel, limit); err != nil {
		return res, err
	}
	return res, nil
}

// rollLevel rolls up the complete windows of lv before limit, and returns how many
// rows it wrote and its watermark.
func (s *Service) rollLevel(ctx context.Context, lv level, limit time.Time) (int, time.Time, error) {
	end := limit.Truncate(lv.width)
	from, err := s.resumeAt(ctx, lv)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("roll up %s telemetry: %w", lv.to, err)
	}
	written := 0
	for from.Before(end) {
		// Skip to the next source row, so that a gap of days costs one query.
		next, ok, err := s.store.FirstTelemetryAt(ctx, lv.from, from)
		if err != nil {
			return written, from, fmt.Errorf("roll up %s telemetry: %w", lv.to, err)
		}
		if !ok || !next.Before(end) {
			break
		}
		from = next.Truncate(lv.width)
		to := from.Add(lv.chunk)
		if to.After(end) {
			to = end
		}
		agg := newAggregate(lv.width)
		err = s.store.EachTelemetry(ctx, lv.from, from, to, func(t *models.TelemetrySample) error {
			agg.add(t)
			return nil
		})
		if err != nil {
			return written, from, fmt.Errorf("roll up %s telemetry: %w", lv.to, err)
		}
		rows := agg.rows(lv.to)
		for len(rows) > 0 {
			n := 1
			for n < len(rows) && rows[n].At.Equal(rows[0].At) {
				n++
			}
			if err := s.writeWindow(ctx, lv, rows[:n]); err != nil {
				return written, from, fmt.Errorf("roll up %s telemetry: %w", lv.to, err)
			}
			written += n
			rows = rows[n:]
		}
		from = to
	}
	return written, maxTime(from, end), nil
}

// rollupRowsPerTx bounds the roll-up rows one transaction writes, so that rolling
// up a fleet's minute (8,000 rows for 1,000 nodes of 8 GPUs) holds SQLite's write
// lock for short spells that heartbeats slip between.
const rollupRowsPerTx = 500

// rolledKey is the setting that holds the end of the newest window of a resolution
// written whole: a window is written in several transactions, and the last one
// moves this mark.
func rolledKey(lv level) string { return "telemetry.rolled_until." + lv.to }

// writeWindow writes the roll-up rows of one window, oldest windows first, a few
// hundred rows per transaction. The first moves the mark to the window's start (all
// before it is whole), the last to its end, so that rows at the mark are a window
// written in part.
func (s *Service) writeWindow(ctx context.Context, lv level, rows []models.TelemetrySample) error {
	start := rows[0].At.UTC()
	for first := true; len(rows) > 0; first = false {
		n := min(len(rows), rollupRowsPerTx)
		chunk := rows[:n]
		rows = rows[n:]
		mark := ""
		switch {
		case len(rows) == 0:
			mark = start.Add(lv.width).Format(time.RFC3339)
		case first:
			mark = start.Format(time.RFC3339)
		}
		err := s.store.InTx(ctx, func(tx *store.Store) error {
			if err := tx.InsertTelemetry(ctx, chunk); err != nil {
				return err
			}
			if mark == "" {
				return nil
			}
			return tx.PutSetting(ctx, rolledKey(lv), mark)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// resumeAt is where rolling up lv goes on: after the newest window written whole,
// or at a window a pass stopped while writing (its rows are deleted first, so none
// is written twice).
func (s *Service) resumeAt(ctx context.Context, lv level) (time.Time, error) {
	until, partial, err := s.rolled(ctx, lv)
	if err != nil || partial.IsZero() {
		return until, err
	}
	return partial, s.store.DeleteTelemetryAt(ctx, lv.to, partial)
}

// rolled says how far lv is rolled up: until is the end of the newest window
// written whole (zero when none is), partial the start of a window that a pass
// stopped while writing (zero when none did). Without a mark (history rolled up
// before windows were written in parts), every window was written whole.
func (s *Service) rolled(ctx context.Context, lv level) (until, partial time.Time, err error) {
	last, any, err := s.store.LastTelemetryAt(ctx, lv.to)
	if err != nil || !any {
		return time.Time{}, time.Time{}, err
	}
	mark, ok, err := s.store.Setting(ctx, rolledKey(lv))
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	if !ok {
		return last.Add(lv.width), time.Time{}, nil
	}
	done, err := time.Parse(time.RFC3339, mark)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("setting %s is %q: %w", rolledKey(lv), mark, err)
	}
	if done.After(last) {
		return last.Add(lv.width), time.Time{}, nil
	}
	// Windows between the mark and the last have no rows: nothing was there to roll up.
	return last, last, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// stat accumulates one gauge: a mean weighted by sample counts, a min and a max.
type stat struct {
	sum      float64
	n        int
	min, max float64
}

func (s *stat) add(avg, lo, hi float64, n int) {
	if s.n == 0 || lo < s.min {
		s.min = lo
	}
	if s.n == 0 || hi > s.max {
		s.max = hi
	}
	s.sum += avg * float64(n)
	s.n += n
}

func (s *stat) mean() float64 { return s.sum / float64(s.n) }

type windowKey struct {
	node   int64
	device string
	job    int64
	start  time.Time
}

// window is the roll-up of one device and job over one window.
type window struct {
	samples                                     int
	reported                                    int
	util, mem, temp, power, clock, nvlink, pcie stat
	ecc                                         int64
	xids                                        int64
	lastXID                                     int
	lastXIDAt                                   time.Time
}

// aggregate rolls rows up into windows of one width. It is pure: the same rows in
// any order give the same roll-up.
type aggregate struct {
	width   time.Duration
	windows map[windowKey]*window
}

func newAggregate(width time.Duration) *aggregate {
	return &aggregate{width: width, windows: map[windowKey]*window{}}
}

func (a *aggregate) add(t *models.TelemetrySample) {
	k := windowKey{node: t.NodeID, device: t.DeviceUUID, start: t.At.UTC().Truncate(a.width)}
	if t.JobID != nil {
		k.job = *t.JobID
	}
	w := a.windows[k]
	if w == nil {
		w = &window{}
		a.windows[k] = w
	}
	n := max(t.Samples, 1)
	w.samples += n
	w.reported |= t.Reported
	gauges := []struct {
		bit         int
		st          *stat
		avg, lo, hi float64
	}{
		{models.ReportedUtil, &w.util, t.UtilPct, t.UtilMinPct, t.UtilMaxPct},
		{models.ReportedMemory, &w.mem, float64(t.MemUsedMiB), float64(t.MemMinMiB), float64(t.MemMaxMiB)},
		{models.ReportedTemperature, &w.temp, t.TempC, t.TempMinC, t.TempMaxC},
		{models.ReportedPower, &w.power, t.PowerW, t.PowerMinW, t.PowerMaxW},
		{models.ReportedSMClock, &w.clock, float64(t.SMClockMHz), float64(t.SMClockMinMHz), float64(t.SMClockMaxMHz)},
		{models.ReportedNVLink, &w.nvlink, t.NVLinkMBps, t.NVLinkMBps, t.NVLinkMaxMBps},
		{models.ReportedPCIe, &w.pcie, t.PCIeMBps, t.PCIeMBps, t.PCIeMaxMBps},
	}
	for _, g := range gauges {
		if t.Reported&g.bit != 0 {
			g.st.add(g.avg, g.lo, g.hi, n)
		}
	}
	// ECC counts are totals since the driver loaded: the window keeps the highest.
	if t.Reported&models.ReportedECC != 0 && t.ECCErrors > w.ecc {
		w.ecc = t.ECCErrors
	}
	w.xids += t.XIDCount
	if t.LastXID != 0 && !t.At.Before(w.lastXIDAt) {
		w.lastXID, w.lastXIDAt = t.LastXID, t.At
	}
}

// rows returns one row per window, ordered by time, node, device and job.
func (a *aggregate) rows(resolution string) []models.TelemetrySample {
	keys := make([]windowKey, 0, len(a.windows))
	for k := range a.windows {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		x, y := keys[i], keys[j]
		if !x.start.Equal(y.start) {
			return x.start.Before(y.start)
		}
		if x.node != y.node {
			return x.node < y.node
		}
		if x.device != y.device {
			return x.device < y.device
		}
		return x.job < y.job
	})
	out := make([]models.TelemetrySample, 0, len(keys))
	for _, k := range keys {
		w := a.windows[k]
		r := models.TelemetrySample{
			NodeID: k.node, DeviceUUID: k.device, At: k.start, Resolution: resolution,
			Samples: w.samples, Reported: w.reported,
			ECCErrors: w.ecc, XIDCount: w.xids, LastXID: w.lastXID,
		}
		if k.job != 0 {
			job := k.job
			r.JobID = &job
		}
		if w.util.n > 0 {
			r.UtilPct, r.UtilMinPct, r.UtilMaxPct = w.util.mean(), w.util.min, w.util.max
		}
		if w.mem.n > 0 {
			r.MemUsedMiB, r.MemMinMiB, r.MemMaxMiB = round(w.mem.mean()), int64(w.mem.min), int64(w.mem.max)
		}
		if w.temp.n > 0 {
			r.TempC, r.TempMinC, r.TempMaxC = w.temp.mean(), w.temp.min, w.temp.max
		}
		if w.power.n > 0 {
			r.PowerW, r.PowerMinW, r.PowerMaxW = w.power.mean(), w.power.min, w.power.max
		}
		if w.clock.n > 0 {
			r.SMClockMHz, r.SMClockMinMHz, r.SMClockMaxMHz = round(w.clock.mean()), int64(w.clock.min), int64(w.clock.max)
		}
		if w.nvlink.n > 0 {
			r.NVLinkMBps, r.NVLinkMaxMBps = w.nvlink.mean(), w.nvlink.max
		}
		if w.pcie.n > 0 {
			r.PCIeMBps, r.PCIeMaxMBps = w.pcie.mean(), w.pcie.max
		}
		out = append(out, r)
	}
	return out
}

func round(v float64) int64 { return int64(math.Round(v)) }
