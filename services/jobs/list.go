package jobs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/images"
	"github.com/gantry-gpu/gantry/services/store"
)

// Sorts are the orders of the jobs list: a column, newest/largest first with "-".
var Sorts = []string{"-submitted_at", "submitted_at", "name", "-name", "-gpus", "gpus"}

// DefaultSort is the order of a list that names none: newest first.
const DefaultSort = "-submitted_at"

// Page sizes of the jobs list: the portal's page (Brief) shows a screenful, which
// costs half the rows and the rendering of the API's default.
const (
	DefaultLimit = 50
	PageLimit    = 25
	MaxLimit     = 200
)

// listColumns are what a jobs list shows of each job: no command or environment,
// which may be large; GET /api/v1/jobs/{id} has those.
var listColumns = []string{"id", "name", "project_id", "user_id", "image_id", "image_ref", "gpus", "gpu_milli", "gpu_memory_mib",
	"gpu_model", "mig_profile", "nvlink", "cpu_milli", "memory_mib", "scratch_mib", "priority_class", "preemptible", "spot", "replicas",
	"max_retries", "retries", "attempt", "expected_run_sec", "state", "state_reason", "pending_reason", "exit_code", "submitted_at",
	"started_at", "finished_at"}

// Scope is where a caller may list jobs: every project (admins and auditors), or
// the projects where they read jobs.
type Scope struct {
	All        bool
	ProjectIDs []int64
}

// ListQuery is a jobs list request as the API and the page receive it, as text;
// List validates every field. States and Projects may repeat or be comma-separated.
type ListQuery struct {
	States   []string
	Projects []string
	User     string
	// Image is a catalog name or an image reference.
	Image string
	// From (inclusive) and To (exclusive) bound the submission time: RFC 3339 times,
	// or days (YYYY-MM-DD; a day as To includes that day).
	From, To string
	Sort     string
	// Cursor is the NextCursor of the page before; empty for the first page.
	Cursor string
	Limit  string
	// Brief reads only what the portal's list shows of a job: ID, name, project, user,
	// image, GPUs, state and submission time (store.BriefJobColumns, less than half the
	// columns); and PageLimit jobs unless Limit says.
	Brief bool
	// ProjectNames asks for every project's name with a Brief page, in the same round
	// trip: the filter of a caller who reads every project. Only with Scope.All.
	ProjectNames bool
}

// ListPage is one page of the jobs list.
type ListPage struct {
	// Jobs hold every field but Command and Env, and the names of their project and
	// user; a Brief query fills Briefs instead.
	Jobs   []store.ListedJob
	Briefs []models.JobBrief
	// NextCursor continues the list after this page; empty on the last page.
	NextCursor string
	// ProjectNames are every project's name, sorted, when the query asked for them.
	ProjectNames []string
}

// List returns one page of the jobs in scope that match q. Bad input is a
// *models.FieldError naming the query parameter; a project outside scope is as
// unknown as one that does not exist.
func (s *Service) List(ctx context.Context, scope Scope, q ListQuery) (ListPage, error) {
	f, err := s.filter(ctx, scope, q)
	if err != nil {
		return ListPage{}, err
	}
	var page ListPage
	if !scope.All && len(f.ProjectIDs) == 0 {
		return page, nil
	}
	limit := f.Limit
	f.Limit++
	switch {
	case q.Brief && q.ProjectNames && scope.All:
		page.Briefs, page.ProjectNames, err = s.store.BriefJobsAndProjectNames(ctx, f)
	case q.Brief:
		page.Briefs, err = s.store.BriefJobs(ctx, f)
	default:
		page.Jobs, err = s.store.ListedJobs(ctx, f)
	}
	if err != nil {
		return ListPage{}, err
	}
	if q.Brief {
		page.Briefs, page.NextCursor = cut(page.Briefs, limit, q.Sort, store.BriefKeyOf)
	} else {
		page.Jobs, page.NextCursor = cut(page.Jobs, limit, q.Sort, func(j *store.ListedJob) store.JobKey { return store.KeyOf(&j.Job) })
	}
	return page, nil
}

// cut keeps the first limit of rows, which were read one over it to learn whether
// the list goes on; if it does, the cursor continues after the last row kept.
func cut[T any](rows []T, limit int, sort string, key func(*T) store.JobKey) ([]T, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	return rows[:limit], encodeCursor(sort, key(&rows[limit-1]))
}

// filter turns q into a store filter within scope.
func (s *Service) filter(ctx context.Context, scope Scope, q ListQuery) (store.JobFilter, error) {
	var f store.JobFilter
	if q.Sort == "" {
		q.Sort = DefaultSort
	}
	if !slices.Contains(Sorts, q.Sort) {
		return f, models.Invalid("sort", "%q is not a sort order: one of %s", q.Sort, strings.Join(Sorts, ", "))
	}
	f.Sort, f.Ascending = strings.TrimPrefix(q.Sort, "-"), !strings.HasPrefix(q.Sort, "-")
	f.Limit, f.Columns = DefaultLimit, listColumns
	if q.Brief {
		f.Limit, f.Columns = PageLimit, store.BriefJobColumns
	}
	if q.Limit != "" {
		n, err := strconv.Atoi(q.Limit)
		if err != nil || n < 1 || n > MaxLimit {
			return f, models.Invalid("limit", "%q is not a page size: a whole number from 1 to %d", q.Limit, MaxLimit)
		}
		f.Limit = n
	}
	if q.Cursor != "" {
		k, err := decodeCursor(q.Cursor, q.Sort)
		if err != nil {
			return f, err
		}
		f.After = &k
	}
	for _, st := range splitList(q.States) {
		if !slices.Contains(models.JobStates, st) {
			return f, models.Invalid("state", "%q is not a job state: one of %s", st, strings.Join(models.JobStates, ", "))
		}
		f.States = append(f.States, st)
	}
	var err error
	if f.ProjectIDs, err = s.projectIDs(ctx, scope, splitList(q.Projects)); err != nil {
		return f, err
	}
	if q.User != "" {
		u, err := s.store.UserByUsername(ctx, q.User)
		if errors.Is(err, store.ErrNotFound) {
			return f, models.Invalid("user", "there is no user %q", q.User)
		}
		if err != nil {
			return f, err
		}
		f.UserID = u.ID
	}
	if err := s.imageFilter(ctx, q.Image, &f); err != nil {
		return f, err
	}
	if f.SubmittedFrom, err = parseBound("from", q.From, false); err != nil {
		return f, err
	}
	if f.SubmittedTo, err = parseBound("to", q.To, true); err != nil {
		return f, err
	}
	if !f.SubmittedFrom.IsZero() && !f.SubmittedTo.IsZero() && !f.SubmittedFrom.Before(f.SubmittedTo) {
		return f, models.Invalid("to", "%q is not after from (%s)", q.To, q.From)
	}
	return f, nil
}

// projectIDs resolves the named projects within scope; none named: all of scope
// (nil for every project).
func (s *Service) projectIDs(ctx context.Context, scope Scope, names []string) ([]int64, error) {
	if len(names) == 0 {
		if scope.All {
			return nil, nil
		}
		return scope.ProjectIDs, nil
	}
	var ids []int64
	for _, name := range names {
		p, err := s.store.ProjectByName(ctx, name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		if err != nil || !scope.All && !slices.Contains(scope.ProjectIDs, p.ID) {
			return nil, models.Invalid("project", "there is no project %q whose jobs you may read", name)
		}
		ids = append(ids, p.ID)
	}
	return ids, nil
}

// imageFilter selects jobs of a catalog image by name, or of an image reference.
func (s *Service) imageFilter(ctx context.Context, image string, f *store.JobFilter) error {
	if image == "" {
		return nil
	}
	img, err := s.store.ImageByName(ctx, image)
	if err == nil {
		f.ImageID = img.ID
		return nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	ref, err := images.ParseReference(image)
	if err != nil {
		return models.Invalid("image", "%q is neither a catalog image nor an image reference: the reference %v", image, err)
	}
	f.ImageRef = ref.String()
	return nil
}

// parseBound reads a time bound: an RFC 3339 time, or a day; a day that ends a
// range includes the whole day.
func parseBound(field, v string, end bool) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.UTC(), nil
	}
	d, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return time.Time{}, models.Invalid(field, "%q is not a time: give a day (2026-03-01) or an RFC 3339 time (2026-03-01T14:00:00Z)", v)
	}
	if end {
		d = d.AddDate(0, 0, 1)
	}
	return d, nil
}

// splitList flattens repeated and comma-separated values, dropping empty ones.
func splitList(vs []string) []string {
	var out []string
	for _, v := range vs {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// cursor is the content of a page cursor: opaque to clients, and tied to its sort,
// since a key means nothing in another order.
type cursor struct {
	Sort        string    `json:"s"`
	SubmittedAt time.Time `json:"t"`
	Name        string    `json:"n,omitempty"`
	GPUs        int       `json:"g,omitempty"`
	ID          int64     `json:"id"`
}

func encodeCursor(sort string, k store.JobKey) string {
	if sort == "" {
		sort = DefaultSort
	}
	// A struct of strings, a time and numbers always encodes.
	b, _ := json.Marshal(cursor{Sort: sort, SubmittedAt: k.SubmittedAt, Name: k.Name, GPUs: k.GPUs, ID: k.ID})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s, sort string) (store.JobKey, error) {
	bad := models.Invalid("cursor", "is not a cursor of this list: pass next_cursor of the page before unchanged, or leave it out for the first page")
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return store.JobKey{}, bad
	}
	var c cursor
	// No job's name holds a NUL, so no cursor of ours does; PostgreSQL could not compare one.
	if err := json.Unmarshal(b, &c); err != nil || c.ID <= 0 || strings.ContainsRune(c.Name, 0) {
		return store.JobKey{}, bad
	}
	if c.Sort != sort {
		return store.JobKey{}, models.Invalid("cursor", "continues the list sorted by %s, not %s: keep the sort while paging, or leave the cursor out", c.Sort, sort)
	}
	return store.JobKey{SubmittedAt: c.SubmittedAt, Name: c.Name, GPUs: c.GPUs, ID: c.ID}, nil
}
