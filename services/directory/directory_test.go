package directory_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/directory"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

type world struct {
	st    *store.Store
	log   *audit.Log
	az    *authz.Authorizer
	dir   *directory.Service
	admin *models.User
}

func newWorld(t *testing.T, st *store.Store) *world {
	t.Helper()
	w := &world{st: st, log: audit.New(st, time.Now)}
	w.az = authz.New(st, w.log)
	disp, err := dispatch.New(dispatch.Deps{Store: st, Scheduler: dispatchtest.FirstFit{}, Audit: w.log, Now: time.Now,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, dispatch.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	w.dir = directory.New(st, w.log, w.az, disp, time.Now)
	w.admin = &models.User{Username: "root", IsAdmin: true}
	if err := st.CreateUser(context.Background(), w.admin); err != nil {
		t.Fatal(err)
	}
	return w
}

func fieldOf(t *testing.T, err error) string {
	t.Helper()
	var fe *models.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("want a field error, got %v", err)
	}
	return fe.Field
}

func TestTeamsAndProjects(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		w := newWorld(t, st)
		if _, err := w.dir.CreateTeam(ctx, "vision", "Computer vision"); err != nil {
			t.Fatal(err)
		}
		_, err := w.dir.CreateTeam(ctx, "vision", "")
		if fieldOf(t, err) != "name" || !strings.Contains(err.Error(), `a team called "vision" already exists`) {
			t.Errorf("duplicate team: %v", err)
		}
		if _, err := w.dir.CreateTeam(ctx, "Vision Team", ""); fieldOf(t, err) != "name" {
			t.Errorf("bad team name: %v", err)
		}
		if _, err := w.dir.CreateProject(ctx, "vision", "detector", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := w.dir.CreateProject(ctx, "vision", "segmenter", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := w.dir.CreateProject(ctx, "vision", "detector", ""); fieldOf(t, err) != "name" {
			t.Errorf("duplicate project: %v", err)
		}
		if _, err := w.dir.CreateProject(ctx, "nobody", "x", ""); fieldOf(t, err) != "team" {
			t.Errorf("project of a missing team: %v", err)
		}
		teams, _ := st.Teams(ctx)
		if len(teams) != 1 {
			t.Fatalf("bad input created teams: %+v", teams)
		}

		// Archiving the team archives its projects; a project cannot come back alone.
		if _, err := w.dir.SetProjectArchived(ctx, "segmenter", true); err != nil {
			t.Fatal(err)
		}
		if _, err := w.dir.SetTeamArchived(ctx, "vision", true); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"detector", "segmenter"} {
			if p, _ := st.ProjectByName(ctx, name); !p.Archived {
				t.Errorf("%s is not archived with its team", name)
			}
		}
		if _, err := w.dir.SetProjectArchived(ctx, "detector", false); fieldOf(t, err) != "project" {
			t.Errorf("restoring a project of an archived team: %v", err)
		}
		if _, err := w.dir.CreateProject(ctx, "vision", "tracker", ""); fieldOf(t, err) != "team" {
			t.Errorf("a project in an archived team: %v", err)
		}
		if _, err := w.dir.SetTeamArchived(ctx, "vision", false); err != nil {
			t.Fatal(err)
		}
		if _, err := w.dir.SetProjectArchived(ctx, "detector", false); err != nil {
			t.Fatal(err)
		}

		page, err := w.log.Events(ctx, store.AuditFilter{ObjectTypes: []string{"team", "project"}}, 0, 20)
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, e := range page.Events {
			actions = append(actions, e.Action+" "+e.ObjectID)
		}
		want := "project.restored detector,team.restored vision,team.archived vision,project.archived segmenter,project.created segmenter,project.created detector,team.created vision"
		if got := strings.Join(actions, ","); got != want {
			t.Errorf("audit = %s\nwant    %s", got, want)
		}
		if !strings.Contains(page.Events[2].Detail, `"projects_archived":["detector"]`) {
			t.Errorf("team archive detail = %s", page.Events[2].Detail)
		}
	})
}

func TestDisableUser(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		w := newWorld(t, st)
		if _, err := w.dir.CreateTeam(ctx, "speech", ""); err != nil {
			t.Fatal(err)
		}
		p, err := w.dir.CreateProject(ctx, "speech", "asr", "")
		if err != nil {
			t.Fatal(err)
		}
		ada := &models.User{Username: "ada"}
		if err := st.CreateUser(ctx, ada); err != nil {
			t.Fatal(err)
		}
		if _, _, err := w.dir.SetProjectRole(ctx, "asr", "ada", models.RoleMember); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateSession(ctx, &models.Session{ID: "s1", UserID: ada.ID, CreatedAt: time.Now(), LastSeenAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		var jobs []*models.Job
		for range 2 {
			j := &models.Job{Name: "train", ProjectID: p.ID, UserID: ada.ID, Command: `["true"]`, Env: "{}", Replicas: 1, Kind: "batch", PriorityClass: "research"}
			if err := st.CreateJob(ctx, j, "test"); err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, j)
		}

		if _, err := w.dir.DisableUser(ctx, w.admin, "root", false); fieldOf(t, err) != "user" {
			t.Errorf("disabling oneself: %v", err)
		}
		if _, err := w.dir.DisableUser(ctx, w.admin, "nobody", false); !errors.As(err, new(*directory.NotFoundError)) {
			t.Errorf("disabling a missing user: %v", err)
		}
		d, err := w.dir.DisableUser(ctx, w.admin, "ada", false)
		if err != nil {
			t.Fatal(err)
		}
		if d.SessionsEnded != 1 || d.JobsStopped != 0 || d.JobsLeft != 2 {
			t.Errorf("disable without stopping jobs = %+v", d)
		}
		if _, err := st.SessionByID(ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the session survived: %v", err)
		}
		if perm, _ := w.az.InProject(ctx, ada.ID, p.ID); perm.CanRead(authz.Jobs) {
			t.Error("a disabled user keeps their role")
		}
		for _, j := range jobs {
			if fresh, _ := st.JobByID(ctx, j.ID); fresh.State != models.JobQueued {
				t.Errorf("job %d is %s; disabling alone must not stop jobs", j.ID, fresh.State)
			}
		}

		// Enabling restores the role; disabling again, this time stopping the jobs.
		if _, err := w.dir.EnableUser(ctx, "ada"); err != nil {
			t.Fatal(err)
		}
		if perm, _ := w.az.InProject(ctx, ada.ID, p.ID); !perm.CanWrite(authz.Jobs) {
			t.Error("an enabled user lost their role")
		}
		if d, err = w.dir.DisableUser(ctx, w.admin, "ada", true); err != nil {
			t.Fatal(err)
		}
		if d.JobsStopped != 2 {
			t.Errorf("disable and stop jobs = %+v", d)
		}
		for _, j := range jobs {
			if fresh, _ := st.JobByID(ctx, j.ID); fresh.State != models.JobCancelled {
				t.Errorf("job %d is %s after disabling with stop", j.ID, fresh.State)
			}
		}
		n, _ := st.CountAuditEvents(ctx, store.AuditFilter{Action: "user.disabled", ObjectID: "ada"})
		if n != 2 {
			t.Errorf("user.disabled events = %d, want 2", n)
		}

		if _, err := w.dir.SetGlobalRoles(ctx, w.admin, "root", false, true); fieldOf(t, err) != "admin" {
			t.Errorf("an admin dropping their own admin role: %v", err)
		}
	})
}

func TestGroupMappings(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		w := newWorld(t, st)
		if _, err := w.dir.CreateTeam(ctx, "nlp", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := w.dir.CreateProject(ctx, "nlp", "chat", ""); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			in    directory.GroupMappingInput
			field string
		}{
			{directory.GroupMappingInput{Group: "", Role: "member", Team: "nlp"}, "group"},
			{directory.GroupMappingInput{Group: "g", Role: "owner", Team: "nlp"}, "role"},
			{directory.GroupMappingInput{Group: "g", Role: "admin", Team: "nlp"}, "role"},
			{directory.GroupMappingInput{Group: "g", Role: "member"}, "project"},
			{directory.GroupMappingInput{Group: "g", Role: "member", Team: "nlp", Project: "chat"}, "project"},
			{directory.GroupMappingInput{Group: "g", Role: "member", Team: "ghosts"}, "team"},
			{directory.GroupMappingInput{Group: "g", Role: "member", Project: "ghost"}, "project"},
		} {
			if _, err := w.dir.CreateGroupMapping(ctx, c.in); fieldOf(t, err) != c.field {
				t.Errorf("%+v: %v, want a field error on %s", c.in, err, c.field)
			}
		}
		if _, err := w.dir.CreateGroupMapping(ctx, directory.GroupMappingInput{Group: "nlp-eng", Role: "member", Team: "nlp"}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.dir.CreateGroupMapping(ctx, directory.GroupMappingInput{Group: "nlp-eng", Role: "viewer", Team: "nlp"}); fieldOf(t, err) != "group" {
			t.Errorf("a second mapping of the same group and scope: %v", err)
		}
		if _, err := w.dir.CreateGroupMapping(ctx, directory.GroupMappingInput{Group: "sec", Role: "auditor"}); err != nil {
			t.Fatal(err)
		}
		all, err := w.dir.GroupMappings(ctx)
		if err != nil || len(all) != 2 || all[0].Scope() != "every project of team nlp" || all[1].Scope() != "platform-wide" {
			t.Fatalf("mappings = %+v, %v", all, err)
		}
		if _, err := w.dir.DeleteGroupMapping(ctx, all[0].ID); err != nil {
			t.Fatal(err)
		}
		if _, err := w.dir.DeleteGroupMapping(ctx, all[0].ID); !errors.As(err, new(*directory.NotFoundError)) {
			t.Errorf("deleting twice: %v", err)
		}
		if n, _ := st.CountAuditEvents(ctx, store.AuditFilter{ObjectTypes: []string{"group_mapping"}}); n != 3 {
			t.Errorf("group mapping audit events = %d, want 3", n)
		}
	})
}
