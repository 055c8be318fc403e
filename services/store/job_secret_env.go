package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/gantry-gpu/gantry/models"
)

// SetJobSecretEnv stores the values of job's secret variables (none: nothing).
func (s *Store) SetJobSecretEnv(ctx context.Context, jobID int64, env map[string]string) error {
	if len(env) == 0 {
		return nil
	}
	rows := make([]models.JobSecretEnv, 0, len(env))
	for k, v := range env {
		rows = append(rows, models.JobSecretEnv{JobID: jobID, Name: k, Value: v})
	}
	if err := translate(s.with(ctx).Create(&rows).Error); err != nil {
		return fmt.Errorf("store secret env of job %d: %w", jobID, err)
	}
	return nil
}

// JobSecretEnv returns the values of a job's secret variables, for its leases.
func (s *Store) JobSecretEnv(ctx context.Context, jobID int64) (map[string]string, error) {
	var rows []models.JobSecretEnv
	if err := s.with(ctx).Where("job_id = ?", jobID).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("secret env of job %d: %w", jobID, err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Name] = r.Value
	}
	return out, nil
}

// SecretEnvOfJobs returns the values of the secret variables of the jobs with ids, by job.
func (s *Store) SecretEnvOfJobs(ctx context.Context, ids []int64) (map[int64]map[string]string, error) {
	out := map[int64]map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []models.JobSecretEnv
	err := inBatches(ids, func(batch []int64) error {
		var part []models.JobSecretEnv
		err := s.with(ctx).Where("job_id IN ?", batch).Find(&part).Error
		rows = append(rows, part...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("secret env of %d jobs: %w", len(ids), err)
	}
	for _, r := range rows {
		if out[r.JobID] == nil {
			out[r.JobID] = map[string]string{}
		}
		out[r.JobID][r.Name] = r.Value
	}
	return out, nil
}

// JobSecretEnvNames returns the names of a job's secret variables, sorted, without
// reading their values.
func (s *Store) JobSecretEnvNames(ctx context.Context, jobID int64) ([]string, error) {
	var names []string
	if err := s.with(ctx).Model(&models.JobSecretEnv{}).Where("job_id = ?", jobID).Pluck("name", &names).Error; err != nil {
		return nil, fmt.Errorf("secret env names of job %d: %w", jobID, err)
	}
	slices.Sort(names)
	return names, nil
}
