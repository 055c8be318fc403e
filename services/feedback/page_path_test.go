package feedback_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// Feedback filed before the portal kept pages by their path alone has its pages' queries
// and fragments dropped by the migration; pages without leave as they were.
func TestMigrationKeepsOnlyThePathOfOldPages(t *testing.T) {
	t.Parallel()
	version := migrationVersion(t, "feedback_page_path")
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			ada := &models.User{Username: "ada"}
			if err := st.CreateUser(ctx, ada); err != nil {
				t.Fatal(err)
			}
			pages := map[string]string{
				"/jobs?user=ada&token=gat_x": "/jobs",
				"/jobs/12?tab=logs#line-4":   "/jobs/12",
				"/cost#a?b":                  "/cost",
				"/cluster?":                  "/cluster",
				"/images":                    "/images",
				"/":                          "/",
				"":                           "",
			}
			ids := map[string]int64{}
			for page := range pages {
				it := &models.FeedbackItem{UserID: ada.ID, Category: "bug", Title: "t " + page, Page: page, Status: models.FeedbackNew}
				if err := st.CreateFeedbackItem(ctx, it); err != nil {
					t.Fatal(err)
				}
				ids[page] = it.ID
			}
			storetest.Exec(t, cfg, "DELETE FROM schema_migrations WHERE version = "+strconv.Itoa(version))
			if applied, err := st.Migrate(ctx); err != nil || len(applied) != 1 || applied[0] != version {
				t.Fatalf("migrate applied %v, %v; want %d", applied, err, version)
			}
			for page, want := range pages {
				it, err := st.FeedbackItemByID(ctx, ids[page])
				if err != nil {
					t.Fatal(err)
				}
				if it.Page != want {
					t.Errorf("page %q became %q, want %q", page, it.Page, want)
				}
			}
		})
	}
}
