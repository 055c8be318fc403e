package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// telemetryColumns are the columns of telemetry_samples that InsertTelemetry writes and
// the scanning functions read, in the order of telemetryValues.
var telemetryColumns = []string{
	"node_id", "device_uuid", "job_id", "at", "resolution", "samples", "reported",
	"util_pct", "util_min_pct", "util_max_pct",
	"mem_used_mib", "mem_min_mib", "mem_max_mib",
	"temp_c", "temp_min_c", "temp_max_c",
	"power_w", "power_min_w", "power_max_w",
	"sm_clock_mhz", "sm_clock_min_mhz", "sm_clock_max_mhz",
	"nvlink_mbps", "nvlink_max_mbps", "pcie_mbps", "pcie_max_mbps",
	"ecc_errors", "xid_count", "last_xid",
}

func telemetryValues(t *models.TelemetrySample) []any {
	return []any{
		t.NodeID, t.DeviceUUID, t.JobID, t.At.UTC(), t.Resolution, t.Samples, t.Reported,
		t.UtilPct, t.UtilMinPct, t.UtilMaxPct,
		t.MemUsedMiB, t.MemMinMiB, t.MemMaxMiB,
		t.TempC, t.TempMinC, t.TempMaxC,
		t.PowerW, t.PowerMinW, t.PowerMaxW,
		t.SMClockMHz, t.SMClockMinMHz, t.SMClockMaxMHz,
		t.NVLinkMBps, t.NVLinkMaxMBps, t.PCIeMBps, t.PCIeMaxMBps,
		t.ECCErrors, t.XIDCount, t.LastXID,
	}
}

func telemetryTargets(t *models.TelemetrySample) []any {
	return []any{
		&t.NodeID, &t.DeviceUUID, &t.JobID, &t.At, &t.Resolution, &t.Samples, &t.Reported,
		&t.UtilPct, &t.UtilMinPct, &t.UtilMaxPct,
		&t.MemUsedMiB, &t.MemMinMiB, &t.MemMaxMiB,
		&t.TempC, &t.TempMinC, &t.TempMaxC,
		&t.PowerW, &t.PowerMinW, &t.PowerMaxW,
		&t.SMClockMHz, &t.SMClockMinMHz, &t.SMClockMaxMHz,
		&t.NVLinkMBps, &t.NVLinkMaxMBps, &t.PCIeMBps, &t.PCIeMaxMBps,
		&t.ECCErrors, &t.XIDCount, &t.LastXID,
	}
}

// InsertTelemetry writes samples in one transaction (the caller's, when s is bound
// to one). It does not read back ids: telemetry rows are only ever read by time range.
func (s *Store) InsertTelemetry(ctx context.Context, samples []models.TelemetrySample) error {
	if len(samples) == 0 {
		return nil
	}
	err := s.atomically(ctx, func(tx *Store) error {
		return tx.insertRows(ctx, "telemetry_samples", telemetryColumns, len(samples), func(i int) []any { return telemetryValues(&samples[i]) })
	})
	if err != nil {
		return fmt.Errorf("insert %d telemetry samples: %w", len(samples), err)
	}
	return nil
}

// telemetryDeleteBatch bounds the rows one DELETE of DeleteTelemetryBefore removes,
// so that pruning a fleet's history holds SQLite's write lock for short spells that
// heartbeats can slip between.
const telemetryDeleteBatch = 1000

// FirstTelemetryAt returns the time of the earliest sample of a resolution at or
// after from; ok is false when there is none.
func (s *Store) FirstTelemetryAt(ctx context.Context, resolution string, from time.Time) (at time.Time, ok bool, err error) {
	return s.edgeTelemetry(ctx, resolution, from, "ASC")
}

// LastTelemetryAt returns the time of the newest sample of a resolution; ok is false
// when there is none.
func (s *Store) LastTelemetryAt(ctx context.Context, resolution string) (at time.Time, ok bool, err error) {
	return s.edgeTelemetry(ctx, resolution, time.Time{}, "DESC")
}

// edgeTelemetry reads one end of the (resolution, at) index. It orders rather than
// using MIN/MAX because SQLite returns an aggregate of a timestamp as text.
func (s *Store) edgeTelemetry(ctx context.Context, resolution string, from time.Time, order string) (time.Time, bool, error) {
	q := s.read(ctx).Model(&models.TelemetrySample{}).Where("resolution = ?", resolution)
	if !from.IsZero() {
		q = q.Where("at >= ?", from.UTC())
	}
	var at []time.Time
	if err := q.Order("at "+order).Limit(1).Pluck("at", &at).Error; err != nil {
		return time.Time{}, false, fmt.Errorf("edge of %s telemetry: %w", resolution, err)
	}
	if len(at) == 0 {
		return time.Time{}, false, nil
	}
	return at[0].UTC(), true, nil
}

// EachTelemetry calls fn for every sample of a resolution with from <= at < to, in no
// particular order, streaming rather than loading them all. fn must not keep the pointer.
func (s *Store) EachTelemetry(ctx context.Context, resolution string, from, to time.Time, fn func(*models.TelemetrySample) error) error {
	rows, err := s.read(ctx).Model(&models.TelemetrySample{}).Select(telemetryColumns).
		Where("resolution = ? AND at >= ? AND at < ?", resolution, from.UTC(), to.UTC()).Rows()
	if err != nil {
		return fmt.Errorf("read %s telemetry from %s to %s: %w", resolution, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), err)
	}
	defer rows.Close()
	var t models.TelemetrySample
	targets := telemetryTargets(&t)
	for rows.Next() {
		t = models.TelemetrySample{}
		if err := rows.Scan(targets...); err != nil {
			return fmt.Errorf("scan %s telemetry: %w", resolution, err)
		}
		t.At = t.At.UTC()
		if err := fn(&t); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s telemetry: %w", resolution, err)
	}
	return nil
}

// DeleteTelemetryBefore deletes the samples of a resolution older than before, a
// batch per statement, and returns how many it deleted.
func (s *Store) DeleteTelemetryBefore(ctx context.Context, resolution string, before time.Time) (int64, error) {
	var total int64
	for {
		res := s.with(ctx).Exec(`DELETE FROM telemetry_samples WHERE id IN (
	SELECT id FROM telemetry_samples WHERE resolution = ? AND at < ? LIMIT ?)`, resolution, before.UTC(), telemetryDeleteBatch)
		if res.Error != nil {
			return total, fmt.Errorf("delete %s telemetry before %s: %w", resolution, before.UTC().Format(time.RFC3339), res.Error)
		}
		total += res.RowsAffected
		if res.RowsAffected < telemetryDeleteBatch {
			return total, nil
		}
	}
}

// DeleteTelemetryAt deletes the samples of a resolution stamped exactly at: the rows
// of one roll-up window.
func (s *Store) DeleteTelemetryAt(ctx context.Context, resolution string, at time.Time) error {
	err := s.with(ctx).Where("resolution = ? AND at = ?", resolution, at.UTC()).Delete(&models.TelemetrySample{}).Error
	if err != nil {
		return fmt.Errorf("delete %s telemetry at %s: %w", resolution, at.UTC().Format(time.RFC3339), err)
	}
	return nil
}

// TelemetryFilter selects a history: one device or one job (or both), one resolution,
// from <= at < to, oldest first, at most Limit rows (default 10,000).
type TelemetryFilter struct {
	DeviceUUID string
	JobID      int64
	Resolution string
	From, To   time.Time
	Limit      int
}

// Telemetry returns the samples matching f, oldest first.
func (s *Store) Telemetry(ctx context.Context, f TelemetryFilter) ([]models.TelemetrySample, error) {
	if f.DeviceUUID == "" && f.JobID == 0 {
		return nil, errors.New("telemetry history: name a device or a job")
	}
	q := s.read(ctx).Model(&models.TelemetrySample{}).Where("resolution = ?", f.Resolution)
	if f.DeviceUUID != "" {
		q = q.Where("device_uuid = ?", f.DeviceUUID)
	}
	if f.JobID != 0 {
		q = q.Where("job_id = ?", f.JobID)
	}
	if !f.From.IsZero() {
		q = q.Where("at >= ?", f.From.UTC())
	}
	if !f.To.IsZero() {
		q = q.Where("at < ?", f.To.UTC())
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 10000
	}
	var out []models.TelemetrySample
	if err := q.Order("at, device_uuid").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("telemetry history of device %q job %d: %w", f.DeviceUUID, f.JobID, err)
	}
	for i := range out {
		out[i].At = out[i].At.UTC()
	}
	return out, nil
}

// GPUReading is the newest raw sample of one device (or MIG instance) with what a
// Prometheus scrape labels it by. For a MIG instance, DeviceIndex, Model and
// ParentUUID are those of its GPU and MIGProfile is set.
type GPUReading struct {
	models.TelemetrySample
	NodeName    string
	DeviceIndex int
	Model       string
	MemoryMiB   int64
	ParentUUID  string
	MIGProfile  string
	JobName     string
	ProjectName string
	TeamName    string
}

// LatestSamplesOfDevices returns the newest raw sample at or after since of each of the
// GPUs whose UUIDs are given (none for a GPU without one), by device UUID: what a page
// showing some of the fleet's GPUs needs, one index probe a GPU.
func (s *Store) LatestSamplesOfDevices(ctx context.Context, since time.Time, uuids []string) ([]models.TelemetrySample, error) {
	if len(uuids) == 0 {
		return nil, nil
	}
	cols := make([]string, len(telemetryColumns))
	for i, c := range telemetryColumns {
		cols[i] = "t." + c
	}
	query := `SELECT ` + strings.Join(cols, ", ") + `
FROM gpu_devices d
JOIN telemetry_samples t ON t.id = (
	SELECT s.id FROM telemetry_samples s
	WHERE s.device_uuid = d.uuid AND s.resolution = ? AND s.at >= ?
	ORDER BY s.at DESC LIMIT 1)
WHERE d.uuid IN ?
ORDER BY t.device_uuid`
	rows, err := s.read(ctx).Raw(query, models.ResolutionRaw, since.UTC(), uuids).Rows()
	if err != nil {
		return nil, fmt.Errorf("latest samples of %d GPUs since %s: %w", len(uuids), since.UTC().Format(time.RFC3339), err)
	}
	defer rows.Close()
	var out []models.TelemetrySample
	for rows.Next() {
		var t models.TelemetrySample
		if err := rows.Scan(telemetryTargets(&t)...); err != nil {
			return nil, fmt.Errorf("scan latest sample: %w", err)
		}
		t.At = t.At.UTC()
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read latest samples: %w", err)
	}
	return out, nil
}

// LatestGPUReadings returns the newest raw sample at or after since of every
// registered GPU and MIG instance, ordered by node name and device UUID.
func (s *Store) LatestGPUReadings(ctx context.Context, since time.Time) ([]GPUReading, error) {
	cols := make([]string, len(telemetryColumns))
	for i, c := range telemetryColumns {
		cols[i] = "t." + c
	}
	// One index probe per known GPU and MIG instance for its newest sample: it stays
	// fast however many samples the window holds and whatever the planner knows.
	query := `SELECT ` + strings.Join(cols, ", ") + `,
	n.name, COALESCE(d.idx, pd.idx, -1), COALESCE(d.model, pd.model, ''), COALESCE(d.memory_mib, sl.memory_mib, 0),
	COALESCE(pd.uuid, ''), COALESCE(sl.profile, ''),
	COALESCE(j.name, ''), COALESCE(p.name, ''), COALESCE(tm.name, '')
FROM (SELECT uuid FROM gpu_devices UNION SELECT uuid FROM gpu_slices) u
JOIN telemetry_samples t ON t.id = (
	SELECT s.id FROM telemetry_samples s
	WHERE s.device_uuid = u.uuid AND s.resolution = ? AND s.at >= ?
	ORDER BY s.at DESC LIMIT 1)
JOIN nodes n ON n.id = t.node_id
LEFT JOIN gpu_devices d ON d.uuid = t.device_uuid
LEFT JOIN gpu_slices sl ON sl.uuid = t.device_uuid
LEFT JOIN gpu_devices pd ON pd.id = sl.device_id
LEFT JOIN jobs j ON j.id = t.job_id
LEFT JOIN projects p ON p.id = j.project_id
LEFT JOIN teams tm ON tm.id = p.team_id
ORDER BY n.name, t.device_uuid`
	rows, err := s.read(ctx).Raw(query, models.ResolutionRaw, since.UTC()).Rows()
	if err != nil {
		return nil, fmt.Errorf("latest GPU readings since %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	defer rows.Close()
	var out []GPUReading
	for rows.Next() {
		var r GPUReading
		targets := append(telemetryTargets(&r.TelemetrySample),
			&r.NodeName, &r.DeviceIndex, &r.Model, &r.MemoryMiB, &r.ParentUUID, &r.MIGProfile,
			&r.JobName, &r.ProjectName, &r.TeamName)
		if err := rows.Scan(targets...); err != nil {
			return nil, fmt.Errorf("scan latest GPU reading: %w", err)
		}
		r.At = r.At.UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read latest GPU readings: %w", err)
	}
	return out, nil
}

// GPUSpec is what a job's GPU (or MIG instance) is: its model and memory.
type GPUSpec struct {
	Model     string
	MemoryMiB int64
}

// GPUSpecsByUUID returns the model and memory of each device or MIG instance named;
// a MIG instance has its parent GPU's model and its own memory. Unknown UUIDs are absent.
func (s *Store) GPUSpecsByUUID(ctx context.Context, uuids []string) (map[string]GPUSpec, error) {
	out := make(map[string]GPUSpec, len(uuids))
	err := inBatches(uuids, func(batch []string) error {
		var devices []models.GPUDevice
		if err := s.read(ctx).Where("uuid IN ?", batch).Find(&devices).Error; err != nil {
			return fmt.Errorf("GPUs by UUID: %w", err)
		}
		for _, d := range devices {
			out[d.UUID] = GPUSpec{Model: d.Model, MemoryMiB: d.MemoryMiB}
		}
		var slices []struct {
			UUID      string
			Model     string
			MemoryMiB int64 `gorm:"column:memory_mib"`
		}
		err := s.read(ctx).Table("gpu_slices sl").Select("sl.uuid, d.model, sl.memory_mib").
			Joins("JOIN gpu_devices d ON d.id = sl.device_id").Where("sl.uuid IN ?", batch).Scan(&slices).Error
		if err != nil {
			return fmt.Errorf("MIG instances by UUID: %w", err)
		}
		for _, sl := range slices {
			out[sl.UUID] = GPUSpec{Model: sl.Model, MemoryMiB: sl.MemoryMiB}
		}
		return nil
	})
	return out, err
}

// DevicePeak is the most one job used of one GPU: memory, and utilisation where the
// GPU reports it (nil in MIG mode).
type DevicePeak struct {
	DeviceUUID  string
	PeakMemMiB  int64 `gorm:"column:peak_mem_mib"`
	PeakUtilPct *float64
}

// JobGPUPeaks returns, per device the job held, its peak memory and its highest
// utilisation mean of one sample at resolution (1-minute means for ResolutionMinute).
func (s *Store) JobGPUPeaks(ctx context.Context, jobID int64, resolution string) ([]DevicePeak, error) {
	var out []DevicePeak
	err := s.read(ctx).Model(&models.TelemetrySample{}).
		Select("device_uuid, MAX(mem_max_mib) AS peak_mem_mib, MAX(CASE WHEN reported & ? <> 0 THEN util_pct END) AS peak_util_pct", models.ReportedUtil).
		Where("job_id = ? AND resolution = ?", jobID, resolution).
		Group("device_uuid").Order("device_uuid").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("GPU peaks of job %d: %w", jobID, err)
	}
	return out, nil
}

// GPUMinutes is how many GPU-minutes a project's jobs held, and how many of them the
// GPU was idle (its utilisation never reached the threshold in that minute).
type GPUMinutes struct {
	Total int64
	Idle  int64
}

// projectsPerQuery bounds the project ids one grouped query names, well inside the
// bind-variable limits of SQLite and PostgreSQL.
const projectsPerQuery = 2000

// ProjectsGPUMinutes counts, per project, the 1-minute telemetry of its jobs with
// from <= at < to, idle when utilisation stayed below idleBelowPct: one query grouped by
// project for up to projectsPerQuery projects, rather than one per project. Projects
// without any are absent.
func (s *Store) ProjectsGPUMinutes(ctx context.Context, projectIDs []int64, from, to time.Time, idleBelowPct float64) (map[int64]GPUMinutes, error) {
	out := map[int64]GPUMinutes{}
	for len(projectIDs) > 0 {
		chunk := projectIDs[:min(len(projectIDs), projectsPerQuery)]
		projectIDs = projectIDs[len(chunk):]
		var rows []struct {
			ProjectID int64
			Total     int64
			Idle      int64
		}
		err := s.read(ctx).Table("telemetry_samples t").
			Select("j.project_id AS project_id, COUNT(*) AS total, COALESCE(SUM(CASE WHEN t.util_max_pct < ? THEN 1 ELSE 0 END), 0) AS idle", idleBelowPct).
			Joins("JOIN jobs j ON j.id = t.job_id").
			Where("j.project_id IN ? AND t.resolution = ? AND t.at >= ? AND t.at < ? AND t.reported & ? <> 0",
				chunk, models.ResolutionMinute, from.UTC(), to.UTC(), models.ReportedUtil).
			Group("j.project_id").Scan(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("GPU minutes of %d projects: %w", len(chunk), err)
		}
		for _, r := range rows {
			out[r.ProjectID] = GPUMinutes{Total: r.Total, Idle: r.Idle}
		}
	}
	return out, nil
}

// JobsGPUMinutes counts, per job, the 1-minute telemetry of jobs with from <= at < to,
// idle when utilisation stayed below idleBelowPct; jobs without any are absent.
func (s *Store) JobsGPUMinutes(ctx context.Context, jobIDs []int64, from, to time.Time, idleBelowPct float64) (map[int64]GPUMinutes, error) {
	out := map[int64]GPUMinutes{}
	for len(jobIDs) > 0 {
		chunk := jobIDs[:min(len(jobIDs), 500)]
		jobIDs = jobIDs[len(chunk):]
		var rows []struct {
			JobID int64
			Total int64
			Idle  int64
		}
		err := s.with(ctx).Table("telemetry_samples").
			Select("job_id, COUNT(*) AS total, COALESCE(SUM(CASE WHEN util_max_pct < ? THEN 1 ELSE 0 END), 0) AS idle", idleBelowPct).
			Where("job_id IN ? AND resolution = ? AND at >= ? AND at < ? AND reported & ? <> 0", chunk, models.ResolutionMinute, from.UTC(), to.UTC(), models.ReportedUtil).
			Group("job_id").Scan(&rows).Error
		if err != nil {
			return nil, fmt.Errorf("GPU minutes of %d jobs: %w", len(chunk), err)
		}
		for _, r := range rows {
			out[r.JobID] = GPUMinutes{Total: r.Total, Idle: r.Idle}
		}
	}
	return out, nil
}
