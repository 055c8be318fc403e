package accounting

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// Dimensions cost can be grouped by ("" is one total).
var Dimensions = []string{store.ByTeam, store.ByProject, store.ByUser, store.ByPool, store.ByGPUModel, store.ByImage, store.ByJob, store.ByResource}

// Buckets are the time grains of a roll-up ("" is one total per key).
var Buckets = []string{store.BucketDay, store.BucketWeek, store.BucketMonth}

// maxRange bounds a roll-up: longer is a typo, not a question.
const maxRange = 5 * 366 * 24 * time.Hour

// Query asks for cost grouped by a dimension and a time grain.
type Query struct {
	By     string
	Bucket string
	// From and To are days, UTC: From inclusive, To exclusive.
	From, To    time.Time
	TeamIDs     []int64
	ProjectIDs  []int64
	UserIDs     []int64
	Resources   []string
	ChargedOnly bool // leave out unallocated capacity
	Limit       int  // keep the most expensive keys (totals only)
}

// Row is the cost of one key in one bucket, with a label a person can read.
type Row struct {
	Key           int64
	Label         string
	Bucket        time.Time
	QuantityMilli int64
	AmountMicros  int64
}

// Unallocated labels the cost of GPUs that no job held.
const Unallocated = "unallocated"

// zeroLabels name the absent key of each dimension.
var zeroLabels = map[string]string{
	store.ByTeam: Unallocated, store.ByProject: Unallocated,
	store.ByUser: "no user (unallocated, or charged to a project)", store.ByJob: "no job (unallocated, or charged to a project)",
	store.ByPool: "no pool", store.ByImage: "no image", store.ByGPUModel: "no GPU", store.ByResource: "?",
}

// Rollup sums the ledger by q and labels the keys with names.
func (a *Accounting) Rollup(ctx context.Context, q Query) ([]Row, error) {
	if err := q.validate(); err != nil {
		return nil, err
	}
	rows, err := a.store.CostRollup(ctx, store.RollupQuery{By: q.By, Bucket: q.Bucket, From: q.From, To: q.To,
		TeamIDs: q.TeamIDs, ProjectIDs: q.ProjectIDs, UserIDs: q.UserIDs, Resources: q.Resources, ChargedOnly: q.ChargedOnly, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	labels, err := a.labels(ctx, q.By, rows)
	if err != nil {
		return nil, err
	}
	out := make([]Row, len(rows))
	for i, r := range rows {
		label := r.Name
		if label == "" && q.By != store.ByGPUModel && q.By != store.ByResource {
			label = labels[r.Key]
		}
		if label == "" && q.By != "" {
			label = zeroLabels[q.By]
		}
		out[i] = Row{Key: r.Key, Label: label, Bucket: r.Bucket, QuantityMilli: r.QuantityMilli, AmountMicros: r.AmountMicros}
	}
	return out, nil
}

func (q *Query) validate() error {
	if q.By != "" && !slices.Contains(Dimensions, q.By) {
		return models.Invalid("by", "%q is not one of %s", q.By, strings.Join(Dimensions, ", "))
	}
	if q.Bucket != "" && !slices.Contains(Buckets, q.Bucket) {
		return models.Invalid("bucket", "%q is not one of %s", q.Bucket, strings.Join(Buckets, ", "))
	}
	for _, r := range q.Resources {
		if _, ok := resourceRules[r]; !ok {
			return models.Invalid("resource", "%q is not one of %s", r, strings.Join(Resources, ", "))
		}
	}
	q.From, q.To = q.From.UTC(), q.To.UTC()
	switch {
	case q.From.IsZero() || q.To.IsZero():
		return models.Invalid("from", "a roll-up needs both from and to (dates, UTC)")
	case !q.From.Before(q.To):
		// Said as the last day, as callers take it (To is the day after it).
		return models.Invalid("to", "%s is before from (%s): to is the last day, on or after from",
			q.To.AddDate(0, 0, -1).Format(time.DateOnly), q.From.Format(time.DateOnly))
	case q.To.Sub(q.From) > maxRange:
		return models.Invalid("to", "the range from %s to %s is longer than five years", q.From.Format(time.DateOnly), q.To.Format(time.DateOnly))
	case q.Limit < 0 || (q.Limit > 0 && q.Bucket != ""):
		return models.Invalid("limit", "a limit of top keys is 1 or more and applies to totals, not to %s buckets", q.Bucket)
	}
	return nil
}

// labels names the keys of rows: team, project, pool and image names, usernames, job names.
func (a *Accounting) labels(ctx context.Context, by string, rows []store.RollupRow) (map[int64]string, error) {
	out := map[int64]string{}
	var err error
	switch by {
	case store.ByTeam:
		var teams []models.Team
		if teams, err = a.store.Teams(ctx); err == nil {
			for _, t := range teams {
				out[t.ID] = t.Name
			}
		}
	case store.ByProject:
		var projects []models.Project
		if projects, err = a.store.Projects(ctx); err == nil {
			for _, p := range projects {
				out[p.ID] = p.Name
			}
		}
	case store.ByUser:
		var users []models.User
		if users, err = a.store.Users(ctx); err == nil {
			for _, u := range users {
				out[u.ID] = u.Username
			}
		}
	case store.ByPool:
		var pools []models.NodePool
		if pools, err = a.store.NodePools(ctx); err == nil {
			for _, p := range pools {
				out[p.ID] = p.Name
			}
		}
	case store.ByImage:
		var images []models.Image
		if images, err = a.store.Images(ctx); err == nil {
			for _, i := range images {
				out[i.ID] = i.Name
			}
		}
	case store.ByJob:
		ids := make([]int64, 0, len(rows))
		for _, r := range rows {
			if r.Key != 0 {
				ids = append(ids, r.Key)
			}
		}
		var jobs []models.Job
		if jobs, err = a.store.JobsByIDs(ctx, ids); err == nil {
			for _, j := range jobs {
				out[j.ID] = fmt.Sprintf("%s (#%d)", j.Name, j.ID)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("label cost by %s: %w", by, err)
	}
	return out, nil
}
