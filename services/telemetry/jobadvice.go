package telemetry

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry/advice"
)

// Histories longer than these are read at the next coarser resolution, so that one
// job's history stays some thousand rows per GPU.
const (
	rawHistoryUpTo    = 6 * time.Hour
	minuteHistoryUpTo = 3 * 24 * time.Hour
	// maxHistoryRows bounds what one history reads (8 GPUs × 3 days of minutes).
	maxHistoryRows = 40000
)

// ResolutionFor picks the resolution to read a history from..to at, now being now:
// raw while the span is short and raw samples are still kept, then 1-minute, then
// 1-hour roll-ups.
func (s *Service) ResolutionFor(from, to, now time.Time) string {
	switch span := to.Sub(from); {
	case span <= rawHistoryUpTo && !from.Before(now.Add(-s.cfg.RawRetention)):
		return models.ResolutionRaw
	case span <= minuteHistoryUpTo:
		return models.ResolutionMinute
	}
	return models.ResolutionHour
}

// jobSpan is when the job ran: from its start (or submission) to its end (or now).
func jobSpan(job *models.Job, now time.Time) (time.Time, time.Time) {
	from, to := job.SubmittedAt, now
	if job.StartedAt != nil {
		from = *job.StartedAt
	}
	if job.FinishedAt != nil {
		to = *job.FinishedAt
	}
	return from.UTC(), to.UTC()
}

// JobHistory reads what advice needs to know of one job as of now.
func (s *Service) JobHistory(ctx context.Context, job *models.Job, now time.Time) (advice.JobHistory, error) {
	from, to := jobSpan(job, now)
	res := s.ResolutionFor(from, to, now)
	gpu, err := s.store.Telemetry(ctx, store.TelemetryFilter{JobID: job.ID, Resolution: res, From: from, To: to.Add(time.Minute), Limit: maxHistoryRows})
	if err != nil {
		return advice.JobHistory{}, fmt.Errorf("history of job %d: %w", job.ID, err)
	}
	var uuids []string
	seen := map[string]bool{}
	for _, r := range gpu {
		if !seen[r.DeviceUUID] {
			seen[r.DeviceUUID] = true
			uuids = append(uuids, r.DeviceUUID)
		}
	}
	specs, err := s.store.GPUSpecsByUUID(ctx, uuids)
	if err != nil {
		return advice.JobHistory{}, fmt.Errorf("history of job %d: %w", job.ID, err)
	}
	memory := make(map[string]int64, len(specs))
	for uuid, sp := range specs {
		memory[uuid] = sp.MemoryMiB
	}
	cpu, err := s.store.JobMetrics(ctx, store.JobMetricFilter{JobID: job.ID, Names: []string{MetricCPUMilli}, Limit: maxHistoryRows})
	if err != nil {
		return advice.JobHistory{}, fmt.Errorf("history of job %d: %w", job.ID, err)
	}
	events, err := s.store.JobEvents(ctx, job.ID)
	if err != nil {
		return advice.JobHistory{}, fmt.Errorf("history of job %d: %w", job.ID, err)
	}
	return advice.JobHistory{Job: *job, GPU: gpu, DeviceMemoryMiB: memory, CPU: cpu, Events: events, Now: now}, nil
}

// JobHints returns the hints that fire for a job as of now.
func (s *Service) JobHints(ctx context.Context, job *models.Job, now time.Time, th advice.Thresholds) ([]advice.Hint, error) {
	h, err := s.JobHistory(ctx, job, now)
	if err != nil {
		return nil, err
	}
	return advice.Hints(h, th), nil
}

// JobIdleFor is how long all of a running job's GPUs have been idle up to now, looking
// no further back than since: the signal of governance's idle-job rule.
func (s *Service) JobIdleFor(ctx context.Context, job *models.Job, now, since time.Time, th advice.Thresholds) (time.Duration, error) {
	from, _ := jobSpan(job, now)
	if since.After(from) {
		from = since
	}
	gpu, err := s.store.Telemetry(ctx, store.TelemetryFilter{JobID: job.ID, Resolution: s.ResolutionFor(from, now, now), From: from, To: now.Add(time.Minute), Limit: maxHistoryRows})
	if err != nil {
		return 0, fmt.Errorf("idle time of job %d: %w", job.ID, err)
	}
	return advice.IdleFor(advice.JobHistory{Job: *job, GPU: gpu, Now: now}, th), nil
}

// ProjectsIdleMinutes counts, per project, the GPU-minutes its jobs held from..to and
// how many of them stayed idle (below th.IdleUtilPct), in one grouped query: the signal
// of governance's project-idle rule. It reads 1-minute roll-ups, so the last few
// minutes are not in yet. Projects without GPU time are absent.
func (s *Service) ProjectsIdleMinutes(ctx context.Context, projectIDs []int64, from, to time.Time, th advice.Thresholds) (map[int64]store.GPUMinutes, error) {
	return s.store.ProjectsGPUMinutes(ctx, projectIDs, from, to, th.IdleUtilPct)
}

// maxSimilarRuns bounds how many earlier runs a recommendation reads.
const maxSimilarRuns = 20

// SimilarRuns measures the earlier runs like job (see advice.Similar): per run, the
// GPUs it used, its peak memory and utilisation, and the model it ran on. Runs
// without telemetry, or whose GPUs report no utilisation, are left out.
func (s *Service) SimilarRuns(ctx context.Context, job *models.Job) ([]advice.Run, error) {
	candidates, err := s.store.Jobs(ctx, store.JobFilter{ProjectIDs: []int64{job.ProjectID}, States: []string{models.JobSucceeded}, Limit: 500})
	if err != nil {
		return nil, fmt.Errorf("runs like job %d: %w", job.ID, err)
	}
	var out []advice.Run
	for _, c := range advice.Similar(*job, candidates, maxSimilarRuns) {
		run, ok, err := s.measureRun(ctx, &c)
		if err != nil {
			return nil, fmt.Errorf("runs like job %d: %w", job.ID, err)
		}
		if ok {
			out = append(out, run)
		}
	}
	return out, nil
}

// measureRun reads one finished run's peaks, from 1-minute roll-ups or, for a run
// too recent to be rolled up, from raw samples.
func (s *Service) measureRun(ctx context.Context, job *models.Job) (advice.Run, bool, error) {
	var peaks []store.DevicePeak
	for _, res := range []string{models.ResolutionMinute, models.ResolutionRaw} {
		var err error
		if peaks, err = s.store.JobGPUPeaks(ctx, job.ID, res); err != nil {
			return advice.Run{}, false, err
		}
		if len(peaks) > 0 {
			break
		}
	}
	run := advice.Run{JobID: job.ID}
	var uuids []string
	for _, p := range peaks {
		if p.PeakUtilPct == nil {
			return advice.Run{}, false, nil // compute needs are unknown
		}
		uuids = append(uuids, p.DeviceUUID)
		run.PeakMemoryMiB = max(run.PeakMemoryMiB, p.PeakMemMiB)
		run.PeakUtilPct = max(run.PeakUtilPct, *p.PeakUtilPct)
		if *p.PeakUtilPct >= advice.DefaultThresholds().IdleUtilPct {
			run.ActiveGPUs++
		}
	}
	if len(uuids) == 0 {
		return advice.Run{}, false, nil
	}
	specs, err := s.store.GPUSpecsByUUID(ctx, uuids)
	if err != nil {
		return advice.Run{}, false, err
	}
	run.Model = specs[uuids[0]].Model
	run.ActiveGPUs = max(run.ActiveGPUs, 1)
	return run, run.Model != "", nil
}

// RecommendProfile recommends a cheaper GPU profile for job from its similar earlier
// runs, given what each shape costs (the rate card's GPU prices).
func (s *Service) RecommendProfile(ctx context.Context, job *models.Job, shapes []advice.Shape, opt advice.RecommendOptions) (advice.Recommendation, bool, error) {
	runs, err := s.SimilarRuns(ctx, job)
	if err != nil {
		return advice.Recommendation{}, false, err
	}
	req := advice.Request{Model: job.GPUModel, GPUs: job.GPUs, Milli: job.GPUMilli, MIGProfile: job.MIGProfile}
	rec, ok := advice.Recommend(req, runs, shapes, opt)
	return rec, ok, nil
}

// JobsIdleMinutes counts, per job, the GPU-minutes it held from..to and how many of them
// stayed idle (below th.IdleUtilPct), from 1-minute roll-ups: what the cost page's
// efficiency panel prices.
func (s *Service) JobsIdleMinutes(ctx context.Context, jobIDs []int64, from, to time.Time, th advice.Thresholds) (map[int64]store.GPUMinutes, error) {
	return s.store.JobsGPUMinutes(ctx, jobIDs, from, to, th.IdleUtilPct)
}
