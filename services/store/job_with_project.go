package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/gantry-gpu/gantry/migrations"
	"github.com/gantry-gpu/gantry/models"
)

// jobColumns and projectColumns are every column of a job and of a project, in the
// order of jobFields and projectFields.
var (
	jobColumns = []string{"id", "name", "project_id", "user_id", "image_id", "image_ref", "command", "env", "gpus", "gpu_milli",
		"gpu_memory_mib", "gpu_model", "mig_profile", "nvlink", "cpu_milli", "memory_mib", "scratch_mib", "replicas", "kind", "priority_class",
		"preemptible", "spot", "expected_run_sec", "max_retries", "retries", "attempt", "state", "state_reason", "pending_reason",
		"exit_code", "rerun_of", "last_checkpoint_at", "submitted_at", "started_at", "finished_at", "created_at", "updated_at"}
	projectColumns = []string{"id", "team_id", "name", "display_name", "archived", "allow_custom_images", "allowed_pools",
		"allowed_regions", "confidential_only", "default_image_id", "created_at", "updated_at"}
)

// jobAndProjectFields are where the columns of jobColumns and projectColumns go.
func jobAndProjectFields(j *models.Job, p *models.Project) []any {
	return append(jobFields(j), projectFields(p)...)
}

// jobFields are where the columns of jobColumns go.
func jobFields(j *models.Job) []any {
	return []any{&j.ID, &j.Name, &j.ProjectID, &j.UserID, &j.ImageID, &j.ImageRef, &j.Command, &j.Env, &j.GPUs, &j.GPUMilli,
		&j.GPUMemoryMiB, &j.GPUModel, &j.MIGProfile, &j.NVLink, &j.CPUMilli, &j.MemoryMiB, &j.ScratchMiB, &j.Replicas, &j.Kind, &j.PriorityClass,
		&j.Preemptible, &j.Spot, &j.ExpectedRunSec, &j.MaxRetries, &j.Retries, &j.Attempt, &j.State, &j.StateReason, &j.PendingReason,
		&j.ExitCode, &j.RerunOf, &j.LastCheckpointAt, &j.SubmittedAt, &j.StartedAt, &j.FinishedAt, &j.CreatedAt, &j.UpdatedAt}
}

// projectFields are where the columns of projectColumns go.
func projectFields(p *models.Project) []any {
	return []any{&p.ID, &p.TeamID, &p.Name, &p.DisplayName, &p.Archived, &p.AllowCustomImages, &p.AllowedPools,
		&p.AllowedRegions, &p.ConfidentialOnly, &p.DefaultImageID, &p.CreatedAt, &p.UpdatedAt}
}

// rowRead reads the first row of query into dest (found says whether there was one):
// on SQLite the row is one json_array() value of the columns.
func (s *Store) rowRead(query string, args []any, dest []any, found *bool) read {
	asJSON := s.dialect == migrations.SQLite
	return read{query: query, args: args, scan: func(rows rowScanner) error {
		if !rows.Next() {
			return nil
		}
		*found = true
		if !asJSON {
			return rows.Scan(dest...)
		}
		var row string
		if err := rows.Scan(&row); err != nil {
			return err
		}
		return scanJSONArray(row, dest)
	}}
}

// rowsRead reads every row of query into dest, as rowRead does the first, and calls
// each after each row: each keeps what dest holds, and empties it for the next row.
func (s *Store) rowsRead(query string, args []any, dest []any, each func()) read {
	asJSON := s.dialect == migrations.SQLite
	return read{query: query, args: args, scan: func(rows rowScanner) error {
		var row string
		for rows.Next() {
			var err error
			if !asJSON {
				err = rows.Scan(dest...)
			} else if err = rows.Scan(&row); err == nil {
				err = scanJSONArray(row, dest)
			}
			if err != nil {
				return err
			}
			each()
		}
		return nil
	}}
}

// JobAndProject returns the job with id and its project, in one statement through
// readRows: the gate of every job route (a job page's refresh every 2 s) needs both,
// and two reads through gorm cost a third of such a refresh.
func (s *Store) JobAndProject(ctx context.Context, id int64) (*models.Job, *models.Project, error) {
	var j models.Job
	var p models.Project
	found := false
	err := s.readRows(ctx, s.rowRead(s.jobAndProjectSQL(), []any{id}, jobAndProjectFields(&j, &p), &found))
	if err == nil && !found {
		err = ErrNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("job %d and its project: %w", id, err)
	}
	return &j, &p, nil
}

// A rowKey keeps the SQL of a one-row read in Store.sqlTexts.
type rowKey string

// jobAndProjectSQL is JobAndProject's statement, written once per Store.
func (s *Store) jobAndProjectSQL() string {
	return s.rowSQL("job and project", append(qualified("j.", jobColumns), qualified("p.", projectColumns)...),
		"jobs j JOIN projects p ON p.id = j.project_id", "j.id")
}

// rowSQL is the statement of a one-row read of cols from tables where key is the
// argument, written once per Store by name; on SQLite the row is one json_array()
// value (see listedJobsQuery).
func (s *Store) rowSQL(name rowKey, cols []string, tables, key string) string {
	if q, ok := s.sqlTexts.Load(name); ok {
		return q.(string)
	}
	q := s.selectRows(strings.Join(cols, ", "), tables+" WHERE "+key+" = "+s.param(1))
	s.sqlTexts.Store(name, q)
	return q
}
