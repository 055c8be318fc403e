package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/migrations"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A next page's index range starts at the cursor: the database seeks to the last
// page's (key, id) and reads a page from there, however deep the page and however
// many jobs share its key. On SQLite the range of a name or GPU sort is bounded by the
// key and the rowid together (migration 0035); bounded by the key alone, a page by GPUs
// 20,000 jobs deep into 100,000 read 8,941 index entries for 51 jobs, the jobs tied on
// the cursor's GPU count. Submission times seldom tie and stay bounded by the time
// (jobs_submitted_brief names id before the columns it covers). PostgreSQL bounds its
// index scan by the row value itself, never filtering by it.
func TestJobsNextPageRangeStartsAtTheCursor(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		w := newJobsWorld(t, s)
		for name, f := range w.filters() {
			if f.Sort == store.JobsByID {
				continue
			}
			k := store.KeyOf(&w.all[len(w.all)/2])
			f.After, f.Limit = &k, 51
			plan, err := s.JobsPlan(ctx, f)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			text := strings.Join(plan, "\n")
			if s.Dialect() == migrations.Postgres {
				bounded := false
				for _, line := range plan {
					step := strings.TrimSpace(line)
					bounded = bounded || strings.HasPrefix(step, "Index Cond:") && strings.Contains(step, "ROW(")
					if strings.HasPrefix(step, "Filter:") && strings.Contains(step, "ROW(") {
						t.Errorf("%s: the cursor filters the scan instead of bounding it:\n%s", name, text)
					}
				}
				if !bounded {
					t.Errorf("%s: no index scan starts at the cursor:\n%s", name, text)
				}
				continue
			}
			cmp := "<"
			if f.Ascending {
				cmp = ">"
			}
			want := "(" + f.Sort + ",rowid)" + cmp + "(?,?)"
			if f.Sort == store.JobsBySubmitted {
				want = f.Sort + cmp + "?"
			}
			reads := 0
			for _, line := range plan {
				step := strings.TrimSpace(line)
				if !strings.HasPrefix(step, "SEARCH jobs") && !strings.HasPrefix(step, "SCAN jobs") || strings.Contains(step, "PRIMARY KEY") {
					continue
				}
				reads++
				if !strings.Contains(step, want) {
					t.Errorf("%s: %q does not bound its range by %s:\n%s", name, step, want, text)
				}
			}
			if reads == 0 {
				t.Errorf("%s: no step reads jobs by the sort:\n%s", name, text)
			}
		}
	})
}
