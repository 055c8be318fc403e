package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/gantry-gpu/gantry/migrations"
	"github.com/gantry-gpu/gantry/models"
)

// CreateJob inserts j as queued with its first event, in one transaction.
func (s *Store) CreateJob(ctx context.Context, j *models.Job, actor string) error {
	j.State = models.JobQueued
	if j.SubmittedAt.IsZero() {
		j.SubmittedAt = time.Now().UTC()
	}
	err := s.InTx(ctx, func(tx *Store) error {
		if err := translate(tx.with(ctx).Create(j).Error); err != nil {
			return err
		}
		ev := &models.JobEvent{JobID: j.ID, ToState: models.JobQueued, Reason: "submitted", Actor: actor}
		if j.RerunOf != nil {
			ev.Message = "re-run of job " + strconv.FormatInt(*j.RerunOf, 10)
		}
		return tx.with(ctx).Create(ev).Error
	})
	if err != nil {
		return fmt.Errorf("create job %s: %w", j.Name, err)
	}
	return nil
}

// JobByID returns the job with id.
func (s *Store) JobByID(ctx context.Context, id int64) (*models.Job, error) {
	var j models.Job
	if err := translate(s.with(ctx).First(&j, id).Error); err != nil {
		return nil, fmt.Errorf("job %d: %w", id, err)
	}
	return &j, nil
}

// Sort orders of the jobs list. JobsByID (the zero value) is newest id first and
// pages with BeforeID; the others page with After.
const (
	JobsByID        = ""
	JobsBySubmitted = "submitted_at"
	JobsByName      = "name"
	JobsByGPUs      = "gpus"
)

// JobKey is where a page of jobs ends: the sort column's value of its last job, and
// the job's id, which breaks ties. Only the field of the filter's sort is read.
type JobKey struct {
	SubmittedAt time.Time
	Name        string
	GPUs        int
	ID          int64
}

// KeyOf returns the key of j, for the After of the next page.
func KeyOf(j *models.Job) JobKey {
	return JobKey{SubmittedAt: j.SubmittedAt, Name: j.Name, GPUs: j.GPUs, ID: j.ID}
}

// BriefKeyOf is the sort key of a brief, as KeyOf.
func BriefKeyOf(b *models.JobBrief) JobKey {
	return JobKey{SubmittedAt: b.SubmittedAt, Name: b.Name, GPUs: b.GPUs, ID: b.ID}
}

// JobFilter selects jobs; zero fields select everything. Pages continue by keyset
// (BeforeID, After), never by offset: a page deep into the list reads as few rows as
// the first one (migrations 0009, 0013 and 0027 have an index for each filter in sort
// order).
type JobFilter struct {
	ProjectIDs []int64
	UserID     int64
	States     []string
	ImageID    int64
	ImageRef   string
	// SubmittedFrom and SubmittedTo bound the submission time: from inclusive, to exclusive.
	SubmittedFrom, SubmittedTo time.Time
	// Sort is one of the JobsBy constants; Ascending reverses the default, which is
	// descending (newest, last name, most GPUs first).
	Sort      string
	Ascending bool
	// After continues a page sorted by Sort after this key.
	After *JobKey
	// Columns, when set, are the only columns read: a list that shows a few reads
	// several times faster than one that reads whole rows.
	Columns  []string
	BeforeID int64
	Limit    int
}

// Jobs returns the jobs matching f in its order, at most f.Limit (default 50).
func (s *Store) Jobs(ctx context.Context, f JobFilter) ([]models.Job, error) {
	q, err := jobsQuery(s.with(ctx), f)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	var out []models.Job
	if err := q.Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return out, nil
}

// BriefJobColumns are what the portal's jobs list shows of a job: the columns of a
// models.JobBrief (its project and user by the names read with them). On SQLite the
// list newest first reads them, with the project and user it joins, from index
// jobs_submitted_brief alone (migration 0034): a column added here reads every job's
// row again unless a migration adds it to that index (TestBriefJobsListReadsOnlyTheIndex).
var BriefJobColumns = []string{"id", "name", "project_id", "image_id", "image_ref", "gpus", "gpu_milli",
	"gpu_model", "mig_profile", "state", "state_reason", "submitted_at"}

// ListedJob is a job of a list with the names of its project and submitter.
type ListedJob struct {
	models.Job
	ProjectName string
	Username    string
}

// ListedJobs returns what Jobs does, with each job's project and user names, in one
// query: a page costs one round trip, not three.
func (s *Store) ListedJobs(ctx context.Context, f JobFilter) ([]ListedJob, error) {
	var out []ListedJob
	if len(f.Columns) == 0 {
		q, err := listedJobsQuery(s.with(ctx), f, false, true)
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		if err := q.Find(&out).Error; err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		return out, nil
	}
	r, err := listRead(s, f, &out, listedField, listedNames, true)
	if err == nil {
		err = s.readRows(ctx, r)
	}
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return out, nil
}

// BriefJobs returns what ListedJobs does as briefs, for the portal's list: f names
// columns that a JobBrief holds.
func (s *Store) BriefJobs(ctx context.Context, f JobFilter) ([]models.JobBrief, error) {
	jobs, _, err := s.briefJobs(ctx, f, false)
	return jobs, err
}

// BriefJobsAndProjectNames is BriefJobs and ProjectNames together, for the jobs page
// of a caller who reads every project (its filter offers every project): on
// PostgreSQL both go in one round trip.
func (s *Store) BriefJobsAndProjectNames(ctx context.Context, f JobFilter) ([]models.JobBrief, []string, error) {
	return s.briefJobs(ctx, f, true)
}

// On PostgreSQL, with every project's name read beside them, the rows are not joined
// to their projects: their names are put in by id from that read. The join cost the
// server about a quarter of the statement (~28 µs of a 26-row page's ~110, measured
// with pgbench); on SQLite it costs less than naming them in Go (~3 µs a page), so
// SQLite joins. The names are read after the rows, each at its own snapshot: every
// project a row names existed at the rows' snapshot, and projects are never deleted.
func (s *Store) briefJobs(ctx context.Context, f JobFilter, withNames bool) ([]models.JobBrief, []string, error) {
	var jobs []models.JobBrief
	var projects projectNames
	byID := withNames && s.dialect == migrations.Postgres
	if byID && len(f.Columns) > 0 && !slices.Contains(f.Columns, "project_id") {
		f.Columns = append(slices.Clip(f.Columns), "project_id")
	}
	r, err := listRead(s, f, &jobs, briefField, briefNames, !byID)
	if err == nil {
		reads := []read{r}
		if withNames {
			reads = append(reads, s.projectNamesRead(&projects))
		}
		err = s.readRows(ctx, reads...)
	}
	if err == nil && byID {
		err = projects.name(jobs)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, projects.sorted, nil
}

// listRead is the read of a list's named columns into out, a T a row: field says
// where column col of a row goes in t (nil for one T does not hold), and names where
// its project's and submitter's names go. Without projectNames, the rows' projects
// are not joined: the caller names them, from the project_id among cols.
// gorm only writes the query: the rows are scanned straight into their fields
// (gorm's reflection per row was a sixth of a list page's CPU), in place (copying
// and regrowing rows was a tenth), and by readRows (on PostgreSQL through pgx itself).
func listRead[T any](s *Store, f JobFilter, out *[]T, field func(t *T, col string) any, names func(t *T) (project, user *string), projectNames bool) (read, error) {
	cols := f.Columns
	if len(cols) == 0 {
		return read{}, errors.New("a list read names its columns")
	}
	var probe T
	for _, c := range cols {
		if field(&probe, c) == nil {
			return read{}, fmt.Errorf("no field for column %q", c)
		}
	}
	if !projectNames && !slices.Contains(cols, "project_id") {
		return read{}, errors.New("a list read without its projects' names reads their ids")
	}
	asJSON := s.dialect == migrations.SQLite
	query, args, err := s.listedJobsSQL(f, asJSON, projectNames)
	if err != nil {
		return read{}, err
	}
	limit := f.Limit
	return read{query: query, args: args, scan: func(rows rowScanner) error {
		*out = make([]T, 0, limit)
		dest := make([]any, len(cols), len(cols)+2)
		var row string
		rowDest := []any{&row}
		var zero T
		for rows.Next() {
			*out = append(*out, zero)
			t := &(*out)[len(*out)-1]
			for i, c := range cols {
				dest[i] = field(t, c)
			}
			project, user := names(t)
			dest = dest[:len(cols)]
			if projectNames {
				dest = append(dest, project)
			}
			dest = append(dest, user)
			if !asJSON {
				if err := rows.Scan(dest...); err != nil {
					return err
				}
				continue
			}
			if err := rows.Scan(rowDest...); err != nil {
				return err
			}
			if err := scanJSONArray(row, dest); err != nil {
				return err
			}
		}
		return nil
	}}, nil
}

func listedField(j *ListedJob, col string) any { return jobField(&j.Job, col) }

func listedNames(j *ListedJob) (project, user *string) { return &j.ProjectName, &j.Username }

func briefNames(b *models.JobBrief) (project, user *string) { return &b.ProjectName, &b.Username }

// briefField is where column col of a jobs row goes in b; nil for a column a brief
// does not hold.
func briefField(b *models.JobBrief, col string) any {
	switch col {
	case "id":
		return &b.ID
	case "name":
		return &b.Name
	case "project_id":
		return &b.ProjectID
	case "image_id":
		return &b.ImageID
	case "image_ref":
		return &b.ImageRef
	case "gpus":
		return &b.GPUs
	case "gpu_milli":
		return &b.GPUMilli
	case "gpu_model":
		return &b.GPUModel
	case "mig_profile":
		return &b.MIGProfile
	case "state":
		return &b.State
	case "state_reason":
		return &b.StateReason
	case "submitted_at":
		return &b.SubmittedAt
	}
	return nil
}

// listedJobsSQL is the SQL of a list read and its arguments, as gorm writes them. A
// list without filters or cursor (the first page of an admin's list, most views of
// the jobs page) has no arguments, and its SQL depends only on its sort, order, limit
// and columns: gorm writes it once per Store, which keeps the text (never rows; a
// few dozen texts: sorts, orders, page sizes and column sets), as writing it cost
// about a third of the list's CPU on PostgreSQL's client side.
func (s *Store) listedJobsSQL(f JobFilter, asJSON, projectNames bool) (string, []any, error) {
	keep := unfiltered(f)
	var key listKey
	if keep {
		key = listKey{sort: f.Sort, ascending: f.Ascending, limit: f.Limit, columns: strings.Join(f.Columns, ","), projectNames: projectNames}
		if q, ok := s.sqlTexts.Load(key); ok {
			return q.(string), nil, nil
		}
	}
	q, err := listedJobsQuery(s.db.Session(&gorm.Session{DryRun: true}), f, asJSON, projectNames)
	if err != nil {
		return "", nil, err
	}
	stmt := q.Find(&[]ListedJob{}).Statement
	if stmt.Error != nil {
		return "", nil, stmt.Error
	}
	query := stmt.SQL.String()
	if keep && len(stmt.Vars) == 0 {
		s.sqlTexts.Store(key, query)
	}
	return query, stmt.Vars, nil
}

// listKey is what the SQL of an unfiltered list depends on.
type listKey struct {
	sort         string
	ascending    bool
	limit        int
	columns      string
	projectNames bool
}

// unfiltered says whether f selects every job: no filter, no cursor. Every field of
// JobFilter is either here or in listKey (TestListKeyCoversJobFilter).
func unfiltered(f JobFilter) bool {
	return len(f.ProjectIDs) == 0 && f.UserID == 0 && len(f.States) == 0 && f.ImageID == 0 && f.ImageRef == "" &&
		f.SubmittedFrom.IsZero() && f.SubmittedTo.IsZero() && f.After == nil && f.BeforeID == 0
}

// jobField is where column col of a jobs row goes in j; nil for a column lists do not read.
func jobField(j *models.Job, col string) any {
	switch col {
	case "id":
		return &j.ID
	case "name":
		return &j.Name
	case "project_id":
		return &j.ProjectID
	case "user_id":
		return &j.UserID
	case "image_id":
		return &j.ImageID
	case "image_ref":
		return &j.ImageRef
	case "gpus":
		return &j.GPUs
	case "gpu_milli":
		return &j.GPUMilli
	case "gpu_memory_mib":
		return &j.GPUMemoryMiB
	case "gpu_model":
		return &j.GPUModel
	case "mig_profile":
		return &j.MIGProfile
	case "nvlink":
		return &j.NVLink
	case "cpu_milli":
		return &j.CPUMilli
	case "memory_mib":
		return &j.MemoryMiB
	case "scratch_mib":
		return &j.ScratchMiB
	case "priority_class":
		return &j.PriorityClass
	case "preemptible":
		return &j.Preemptible
	case "spot":
		return &j.Spot
	case "replicas":
		return &j.Replicas
	case "max_retries":
		return &j.MaxRetries
	case "retries":
		return &j.Retries
	case "attempt":
		return &j.Attempt
	case "state":
		return &j.State
	case "state_reason":
		return &j.StateReason
	case "pending_reason":
		return &j.PendingReason
	case "exit_code":
		return &j.ExitCode
	case "expected_run_sec":
		return &j.ExpectedRunSec
	case "submitted_at":
		return &j.SubmittedAt
	case "started_at":
		return &j.StartedAt
	case "finished_at":
		return &j.FinishedAt
	}
	return nil
}

// listedJobsQuery is the query of ListedJobs. asJSON reads each row's named columns
// and names as one json_array() value: the SQLite driver reads each column value
// through several calls, and one array per row costs about two thirds of its columns
// (a page of 23 rows of 11 columns, statement prepared: ~78 µs of CPU against ~114).
// Without projectNames it does not join projects (see briefJobs).
func listedJobsQuery(db *gorm.DB, f JobFilter, asJSON, projectNames bool) (*gorm.DB, error) {
	cols := []string{"jobs.*"}
	if len(f.Columns) > 0 {
		cols = qualified("jobs.", f.Columns)
		f.Columns = nil
	}
	q, err := jobsQuery(db, f)
	if err != nil {
		return nil, err
	}
	if projectNames {
		q = q.Joins("JOIN projects ON projects.id = jobs.project_id")
	}
	q = q.Joins("JOIN users ON users.id = jobs.user_id")
	if asJSON {
		names := ", users.username"
		if projectNames {
			names = ", projects.name, users.username"
		}
		return q.Select("json_array(" + strings.Join(cols, ", ") + names + ")"), nil
	}
	if projectNames {
		cols = append(cols, "projects.name AS project_name")
	}
	return q.Select(append(cols, "users.username AS username")), nil
}

// qualified prefixes each column with table.
func qualified(table string, cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = table + c
	}
	return out
}

// jobsQuery builds the query of f on db. Columns are qualified: ListedJobs joins
// projects and users, which have names and ids of their own.
func jobsQuery(db *gorm.DB, f JobFilter) (*gorm.DB, error) {
	if parts := branches(f); len(parts) > 1 {
		return union(db, f, parts)
	}
	return oneQuery(db, f)
}

// oneQuery is the query of f as a single SELECT, lists of projects and states as IN.
func oneQuery(db *gorm.DB, f JobFilter) (*gorm.DB, error) {
	q := db.Model(&models.Job{})
	if len(f.Columns) > 0 {
		q = q.Select(qualified("jobs.", f.Columns))
	}
	if len(f.ProjectIDs) == 1 {
		q = q.Where("jobs.project_id = ?", f.ProjectIDs[0])
	} else if len(f.ProjectIDs) > 1 {
		q = q.Where("jobs.project_id IN ?", f.ProjectIDs)
	}
	if f.UserID != 0 {
		q = q.Where("jobs.user_id = ?", f.UserID)
	}
	if len(f.States) == 1 {
		q = q.Where("jobs.state = ?", f.States[0])
	} else if len(f.States) > 1 {
		q = q.Where("jobs.state IN ?", f.States)
	}
	if f.ImageID != 0 {
		q = q.Where("jobs.image_id = ?", f.ImageID)
	}
	if f.ImageRef != "" {
		q = q.Where("jobs.image_ref = ?", f.ImageRef)
	}
	if !f.SubmittedFrom.IsZero() {
		q = q.Where("jobs.submitted_at >= ?", f.SubmittedFrom.UTC())
	}
	if !f.SubmittedTo.IsZero() {
		q = q.Where("jobs.submitted_at < ?", f.SubmittedTo.UTC())
	}
	if f.BeforeID > 0 {
		q = q.Where("jobs.id < ?", f.BeforeID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	dir, cmp := "DESC", "<"
	if f.Ascending {
		dir, cmp = "ASC", ">"
	}
	if f.Sort == JobsByID {
		if f.After != nil {
			q = q.Where("jobs.id "+cmp+" ?", f.After.ID)
		}
		return q.Order("jobs.id " + dir).Limit(limit), nil
	}
	key, ok := sortKey(f.Sort, f.After)
	if !ok {
		return nil, fmt.Errorf("unknown sort %q", f.Sort)
	}
	if f.After != nil {
		// A row value compares (key, id) in one step, which both databases answer
		// from the (key, id) index, the range starting at the cursor. SQLite bounds
		// the range by the id too only where it is the index's implicit rowid
		// (migration 0035) and the comparison has a collation, which a rowid lacks;
		// without, a page walks every job tied on the key before its own.
		id := "?"
		if db.Dialector.Name() == migrations.SQLite {
			id = "? COLLATE BINARY"
		}
		q = q.Where("(jobs."+f.Sort+", jobs.id) "+cmp+" (?, "+id+")", key, f.After.ID)
	}
	return q.Order("jobs." + f.Sort + " " + dir).Order("jobs.id " + dir).Limit(limit), nil
}

// maxBranches bounds the keyset queries one list merges: each reads up to a page of
// index entries, and SQLite refuses a UNION of more than 500.
const maxBranches = 64

// branches splits f into one filter per project and per state, when there are
// several of either: no index orders "project_id IN (…)" or "state IN (…)" by the
// sort, so the database would walk the sort's index skipping other projects' and
// states' jobs, or read every matching job and sort them. Each branch has an index
// in its order (migrations 0009, 0013, 0027), but for one state of a project in id
// order, where states are not split. More combinations than maxBranches split by
// project only, or not at all. One user's list is not split: the user's index in
// sort order (0009, 0028) reads the user's jobs, few beside a project's, and most in
// the projects the list asks for ("Only mine" of a member's projects).
func branches(f JobFilter) []JobFilter {
	if f.UserID != 0 {
		return nil
	}
	projects := [][]int64{f.ProjectIDs}
	if len(f.ProjectIDs) > 1 {
		projects = make([][]int64, len(f.ProjectIDs))
		for i := range f.ProjectIDs {
			projects[i] = f.ProjectIDs[i : i+1]
		}
	}
	byState := len(f.ProjectIDs) == 0 || f.Sort != JobsByID
	states := [][]string{f.States}
	if len(f.States) > 1 && byState && len(projects)*len(f.States) <= maxBranches {
		states = make([][]string, len(f.States))
		for i := range f.States {
			states[i] = f.States[i : i+1]
		}
	}
	if len(projects)*len(states) > maxBranches {
		return nil
	}
	out := make([]JobFilter, 0, len(projects)*len(states))
	for _, p := range projects {
		for _, st := range states {
			b := f
			b.ProjectIDs, b.States = p, st
			out = append(out, b)
		}
	}
	return out
}

// union is the query of f as the merge of parts, the branches of f. The page's jobs
// are found first, by key and id alone: a UNION ALL of each part's page, which its
// index in sort order answers without reading the table, merged and cut to one page.
// Only that page's rows are then read, by id: merging whole rows read every column
// of every part's page (on SQLite, more than twice the cost of the page).
func union(db *gorm.DB, f JobFilter, parts []JobFilter) (*gorm.DB, error) {
	keys := []string{"id"}
	if f.Sort != JobsByID {
		keys = []string{f.Sort, "id"}
	}
	sql := make([]string, len(parts))
	subs := make([]any, len(parts))
	for i, part := range parts {
		part.Columns = keys
		q, err := oneQuery(db, part)
		if err != nil {
			return nil, err
		}
		sql[i], subs[i] = fmt.Sprintf("SELECT * FROM (?) AS p%d", i), q
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	dir := " DESC"
	if f.Ascending {
		dir = " ASC"
	}
	merged := gorm.Expr(strings.Join(sql, " UNION ALL "), subs...)
	top := db.Table("(?) AS u", merged).Select(qualified("u.", keys))
	page := db.Table("(?) AS top", addOrder(top, "u.", keys, dir).Limit(limit)).Joins("JOIN jobs ON jobs.id = top.id")
	cols := []string{"jobs.*"}
	if len(f.Columns) > 0 {
		cols = qualified("jobs.", f.Columns)
	}
	return addOrder(page.Select(cols), "top.", keys, dir), nil
}

// addOrder orders q by the columns of table, each in dir.
func addOrder(q *gorm.DB, table string, cols []string, dir string) *gorm.DB {
	for _, c := range cols {
		q = q.Order(table + c + dir)
	}
	return q
}

// sortKey returns the value of k's sort column, and whether sort is a sort column.
func sortKey(sort string, k *JobKey) (any, bool) {
	if k == nil {
		k = &JobKey{}
	}
	switch sort {
	case JobsBySubmitted:
		return k.SubmittedAt.UTC(), true
	case JobsByName:
		return k.Name, true
	case JobsByGPUs:
		return k.GPUs, true
	}
	return nil, false
}

// Transition is one state change of a job.
type Transition struct {
	From, To string
	Reason   string
	Message  string
	Actor    string
	// Attempt, when non-zero, becomes the job's attempt: a new attempt is scheduled.
	Attempt int
	// Retries, when non-nil, becomes the job's count of retries used.
	Retries *int
	// ExitCode, when non-nil, is recorded as the job's exit code.
	ExitCode *int
}

// TransitionJob moves job id from t.From to t.To and records the event, atomically.
// It fails with ErrStale when the job is no longer in t.From, and refuses moves
// that the job state machine does not allow.
func (s *Store) TransitionJob(ctx context.Context, id int64, t Transition) error {
	if !models.CanTransition(t.From, t.To) {
		return fmt.Errorf("job %d: a job cannot move from %s to %s", id, t.From, t.To)
	}
	err := s.InTx(ctx, func(tx *Store) error {
		now := time.Now().UTC()
		updates := map[string]any{"state": t.To, "state_reason": t.Reason, "updated_at": now}
		switch {
		case t.To == models.JobRunning:
			updates["started_at"] = now
		case models.IsTerminal(t.To):
			updates["finished_at"] = now
		}
		if t.Attempt > 0 {
			updates["attempt"] = t.Attempt
		}
		if t.Retries != nil {
			updates["retries"] = *t.Retries
		}
		if t.ExitCode != nil {
			updates["exit_code"] = *t.ExitCode
		}
		res := tx.with(ctx).Model(&models.Job{}).Where("id = ? AND state = ?", id, t.From).Updates(updates)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			if _, err := tx.JobByID(ctx, id); err != nil {
				return err
			}
			return fmt.Errorf("%w: job is no longer %s", ErrStale, t.From)
		}
		var attempt int
		if err := tx.with(ctx).Model(&models.Job{}).Where("id = ?", id).Pluck("attempt", &attempt).Error; err != nil {
			return err
		}
		return tx.with(ctx).Create(&models.JobEvent{
			JobID: id, Attempt: attempt, FromState: t.From, ToState: t.To,
			Reason: t.Reason, Message: t.Message, Actor: t.Actor,
		}).Error
	})
	if err != nil {
		return fmt.Errorf("move job %d from %s to %s: %w", id, t.From, t.To, err)
	}
	return nil
}

// NoteAttempt records on a job's timeline something that befell one of its attempts,
// whatever the job's state now (NoteJob: an event of the job in a state).
func (s *Store) NoteAttempt(ctx context.Context, jobID int64, attempt int, reason, message string) error {
	err := s.atomically(ctx, func(tx *Store) error {
		var state []string
		if err := tx.with(ctx).Model(&models.Job{}).Where("id = ?", jobID).Pluck("state", &state).Error; err != nil {
			return err
		}
		if len(state) == 0 {
			return ErrNotFound
		}
		return tx.with(ctx).Create(&models.JobEvent{JobID: jobID, Attempt: attempt, FromState: state[0], ToState: state[0],
			Reason: reason, Message: message}).Error
	})
	if err != nil {
		return fmt.Errorf("note %s on job %d: %w", reason, jobID, err)
	}
	return nil
}

// JobEvents returns the events of a job, oldest first.
func (s *Store) JobEvents(ctx context.Context, jobID int64) ([]models.JobEvent, error) {
	var out []models.JobEvent
	if err := s.with(ctx).Where("job_id = ?", jobID).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("events of job %d: %w", jobID, err)
	}
	return out, nil
}

// JobCountsByState returns how many jobs are in each of states, or in each state when
// none is named. Name the states wanted: counting every job reads every job (the
// finished pile up), counting the queued and running reads only those (an index by
// state).
func (s *Store) JobCountsByState(ctx context.Context, states ...string) (map[string]int, error) {
	var rows []struct {
		State string
		N     int
	}
	q := s.with(ctx).Model(&models.Job{}).Select("state, COUNT(*) AS n")
	if len(states) > 0 {
		q = q.Where("state IN ?", states)
	}
	if err := q.Group("state").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count jobs by state: %w", err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.State] = r.N
	}
	return out, nil
}
