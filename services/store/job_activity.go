package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/gantry-gpu/gantry/migrations"
)

// JobActivity returns a text that changes whenever what a job's page shows beyond the
// job's own row does: a new event (events are only appended), an allocation placed,
// moved, started, stopping or ended, a new charge, or the metering watermark moving.
// It is one statement through readRows (on SQLite, the read pool; on PostgreSQL, pgx
// itself), for a page that refreshes every few seconds to learn cheaply whether to
// draw itself again.
func (s *Store) JobActivity(ctx context.Context, jobID int64) (string, error) {
	var b strings.Builder
	err := s.readRows(ctx, read{query: s.jobActivitySQL(), args: []any{jobID, jobID, meteredUntilKey, jobID}, scan: func(rows rowScanner) error {
		var row string
		dest := []any{&row}
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			b.WriteString(row)
			b.WriteByte('\n')
		}
		return nil
	}})
	if err != nil {
		return "", fmt.Errorf("activity of job %d: %w", jobID, err)
	}
	return b.String(), nil
}

// jobActivityKey keeps the SQL of JobActivity in Store.sqlTexts.
type jobActivityKey struct{}

// jobActivitySQL is JobActivity's statement, written once per Store. Each row is one
// allocation (or a single row of NULLs where there is none), with the job's last
// event, its last charge, the watermark and whether any rate is set alongside, as one
// JSON array: one text column, which the SQLite driver reads for less than twelve.
func (s *Store) jobActivitySQL() string {
	if q, ok := s.sqlTexts.Load(jobActivityKey{}); ok {
		return q.(string)
	}
	list, p := "json_array(%s)", func(int) string { return "?" }
	if s.dialect == migrations.Postgres {
		list, p = "json_build_array(%s)::text", func(n int) string { return fmt.Sprintf("$%d", n) }
	}
	cols := "(SELECT COALESCE(MAX(id), 0) FROM job_events WHERE job_id = " + p(1) + "), " +
		"(SELECT COALESCE(MAX(id), 0) FROM ledger_entries WHERE job_id = " + p(2) + "), " +
		"(SELECT value FROM settings WHERE key = " + p(3) + "), " +
		"EXISTS (SELECT 1 FROM cost_rates), " +
		"a.attempt, a.replica, a.node_id, a.devices, a.state, a.stop_reason, a.exit_code, a.started_at, a.ended_at"
	q := "SELECT " + fmt.Sprintf(list, cols) + " FROM (SELECT 1 AS one) o LEFT JOIN allocations a ON a.job_id = " + p(4) +
		" ORDER BY a.attempt, a.replica"
	s.sqlTexts.Store(jobActivityKey{}, q)
	return q
}
