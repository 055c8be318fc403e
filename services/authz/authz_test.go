package authz_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

type world struct {
	st       *store.Store
	log      *audit.Log
	az       *authz.Authorizer
	own      *models.Project
	foreign  *models.Project
	users    map[string]*models.User // by role; "none" holds no role
	disabled *models.User
}

func setup(t *testing.T, st *store.Store) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{st: st, log: audit.New(st, time.Now), users: map[string]*models.User{}}
	w.az = authz.New(st, w.log)
	for _, name := range []string{"vision", "speech"} {
		team := &models.Team{Name: name}
		if err := st.CreateTeam(ctx, team); err != nil {
			t.Fatal(err)
		}
		p := &models.Project{TeamID: team.ID, Name: name + "-main"}
		if err := st.CreateProject(ctx, p); err != nil {
			t.Fatal(err)
		}
		if w.own == nil {
			w.own = p
		} else {
			w.foreign = p
		}
	}
	for _, role := range []string{models.RoleAdmin, models.RoleAuditor, models.RoleTeamLead, models.RoleMember, models.RoleViewer, "none", "disabled"} {
		u := &models.User{Username: role + "-user"}
		if err := st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		switch role {
		case models.RoleAdmin, models.RoleAuditor:
			if err := w.az.SetGlobalRoles(ctx, u, role == models.RoleAdmin, role == models.RoleAuditor); err != nil {
				t.Fatal(err)
			}
		case "none":
		case "disabled":
			if err := w.az.SetProjectRole(ctx, u, w.own, models.RoleTeamLead); err != nil {
				t.Fatal(err)
			}
			u.Disabled = true
			err := st.InTx(ctx, func(tx *store.Store) error {
				if err := tx.UpdateUser(ctx, u); err != nil {
					return err
				}
				return authz.PolicyChanged(ctx, tx)
			})
			if err != nil {
				t.Fatal(err)
			}
			w.disabled = u
			continue
		default:
			if err := w.az.SetProjectRole(ctx, u, w.own, role); err != nil {
				t.Fatal(err)
			}
		}
		w.users[role] = u
	}
	return w
}

// expected is the role matrix written out by hand, independent of DefaultPolicy: for each
// role, what it may do in its own project, in a foreign one, and platform-wide.
var expected = map[string]struct{ own, foreign, global []string }{
	models.RoleAdmin: {
		own:     []string{"project:read", "project:write", "project:manage", "jobs:read", "jobs:write", "jobs:manage", "cost:read", "cost:write", "cost:manage", "audit:read", "audit:write", "audit:manage", "platform:read", "platform:write", "platform:manage"},
		foreign: []string{"project:read", "project:write", "project:manage", "jobs:read", "jobs:write", "jobs:manage", "cost:read", "cost:write", "cost:manage", "audit:read", "audit:write", "audit:manage", "platform:read", "platform:write", "platform:manage"},
		global:  []string{"project:read", "project:write", "project:manage", "jobs:read", "jobs:write", "jobs:manage", "cost:read", "cost:write", "cost:manage", "audit:read", "audit:write", "audit:manage", "platform:read", "platform:write", "platform:manage"},
	},
	models.RoleAuditor: {
		own:     []string{"project:read", "jobs:read", "cost:read", "audit:read", "platform:read"},
		foreign: []string{"project:read", "jobs:read", "cost:read", "audit:read", "platform:read"},
		global:  []string{"project:read", "jobs:read", "cost:read", "audit:read", "platform:read"},
	},
	models.RoleTeamLead: {own: []string{"project:read", "project:manage", "jobs:read", "jobs:write", "cost:read"}},
	models.RoleMember:   {own: []string{"project:read", "jobs:read", "jobs:write", "cost:read"}},
	models.RoleViewer:   {own: []string{"project:read", "jobs:read", "cost:read"}},
	"none":              {},
}

func granted(p authz.Permission) []string {
	var out []string
	for _, obj := range authz.Objects() {
		for _, act := range authz.Actions() {
			if p.Can(obj, act) {
				out = append(out, string(obj)+":"+string(act))
			}
		}
	}
	return out
}

func same(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

func TestRoleMatrix(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		w := setup(t, st)
		for role, want := range expected {
			u := w.users[role]
			own, err := w.az.InProject(ctx, u.ID, w.own.ID)
			if err != nil {
				t.Fatal(err)
			}
			foreign, _ := w.az.InProject(ctx, u.ID, w.foreign.ID)
			global, _ := w.az.Global(ctx, u.ID)
			if got := granted(own); !same(got, want.own) {
				t.Errorf("%s in own project: %v, want %v", role, got, want.own)
			}
			if got := granted(foreign); !same(got, want.foreign) {
				t.Errorf("%s in a foreign project: %v, want %v", role, got, want.foreign)
			}
			if got := granted(global); !same(got, want.global) {
				t.Errorf("%s platform-wide: %v, want %v", role, got, want.global)
			}
		}
		p, _ := w.az.InProject(ctx, w.disabled.ID, w.own.ID)
		if got := granted(p); len(got) != 0 {
			t.Errorf("a disabled team lead may still %v", got)
		}
		lead, _ := w.az.InProject(ctx, w.users[models.RoleTeamLead].ID, w.own.ID)
		if !same(lead.Roles, []string{models.RoleTeamLead}) || !lead.CanManage(authz.Project) {
			t.Errorf("team lead permission = %+v", lead)
		}
		if ro := lead.ReadOnly(); ro.CanWrite(authz.Jobs) || ro.CanManage(authz.Project) || !ro.CanRead(authz.Jobs) {
			t.Errorf("read-only team lead = %v", granted(ro))
		}
	})
}

func TestGrantChangesReachEveryReplica(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		w := setup(t, st)
		replica := authz.New(st, w.log)
		viewer := w.users[models.RoleViewer]
		if p, _ := replica.InProject(ctx, viewer.ID, w.own.ID); p.CanWrite(authz.Jobs) {
			t.Fatal("viewer may write jobs")
		}
		if p, _ := w.az.InProject(ctx, viewer.ID, w.own.ID); p.CanWrite(authz.Jobs) {
			t.Fatal("viewer may write jobs")
		}
		if err := w.az.SetProjectRole(ctx, viewer, w.own, models.RoleMember); err != nil {
			t.Fatal(err)
		}
		// Both asked before: neither may answer from what it worked out then.
		if p, _ := replica.InProject(ctx, viewer.ID, w.own.ID); !p.CanWrite(authz.Jobs) {
			t.Fatal("the other replica did not see the promotion")
		}
		if p, _ := w.az.InProject(ctx, viewer.ID, w.own.ID); !p.CanWrite(authz.Jobs) || !slices.Contains(p.Roles, models.RoleMember) {
			t.Fatalf("the replica that promoted answers %v", p.Roles)
		}
		if err := w.az.RemoveFromProject(ctx, viewer, w.own); err != nil {
			t.Fatal(err)
		}
		if p, _ := replica.InProject(ctx, viewer.ID, w.own.ID); p.CanRead(authz.Project) {
			t.Fatal("the other replica did not see the removal")
		}
		if err := w.az.RemoveFromProject(ctx, viewer, w.own); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("removing a non-member: %v, want ErrNotFound", err)
		}
		auditor := w.users[models.RoleAuditor]
		if err := w.az.SetGlobalRoles(ctx, auditor, false, false); err != nil {
			t.Fatal(err)
		}
		if p, _ := replica.Global(ctx, auditor.ID); p.CanRead(authz.Audit) {
			t.Fatal("a former auditor still reads the audit log on the other replica")
		}
		var fe *models.FieldError
		if err := w.az.SetProjectRole(ctx, viewer, w.own, "owner"); !errors.As(err, &fe) || fe.Field != "role" {
			t.Errorf("unknown role: %v, want a field error on role", err)
		}
		// Every change above is in the audit log, with what it was before.
		page, err := w.log.Events(ctx, store.AuditFilter{ProjectID: &w.own.ID}, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) < 2 || page.Events[0].Action != "role.revoked" || !strings.Contains(page.Events[0].Detail, `"previous":"member"`) ||
			page.Events[1].Action != "role.granted" || !strings.Contains(page.Events[1].Detail, `"previous":"viewer"`) {
			t.Fatalf("audit of role changes = %+v", page.Events)
		}
		if n, _ := st.CountAuditEvents(ctx, store.AuditFilter{Action: "role.revoked", Actor: "system"}); n != 2 {
			t.Errorf("role.revoked events = %d, want 2 (project and global)", n)
		}
	})
}

func TestPolicyLivesInCasbinRule(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			w := setup(t, st)
			ctx := context.Background()
			member := w.users[models.RoleMember]
			if p, _ := w.az.InProject(ctx, member.ID, w.own.ID); p.CanManage(authz.Project) {
				t.Fatal("member may manage")
			}
			// An operator grants members the right to manage members, in the table itself.
			storetest.Exec(t, cfg, "INSERT INTO casbin_rule (ptype, v0, v1, v2, v3) VALUES ('p', 'member', '*', 'project', 'manage')")
			if err := st.InTx(ctx, func(tx *store.Store) error { return authz.PolicyChanged(ctx, tx) }); err != nil {
				t.Fatal(err)
			}
			if p, _ := w.az.InProject(ctx, member.ID, w.own.ID); !p.CanManage(authz.Project) {
				t.Fatal("a policy line added to casbin_rule was not loaded")
			}
			if p, _ := w.az.InProject(ctx, member.ID, w.foreign.ID); p.CanManage(authz.Project) {
				t.Fatal("the line leaked into a foreign project")
			}
			// The default lines were stored by the first load, in the table itself.
			stored, err := st.CasbinPolicyLines(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range authz.DefaultPolicy() {
				if !slices.ContainsFunc(stored, func(l []string) bool { return slices.Equal(l, append([]string{"p"}, line...)) }) {
					t.Errorf("default line %v is not in casbin_rule", line)
				}
			}
		})
	}
}

func cancelled(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	return ctx
}

func TestPermissionsAtTheVersionReadWithTheCredential(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		w := setup(t, st)
		viewer := w.users[models.RoleViewer]
		at := func() context.Context {
			v, _, err := st.Setting(ctx, authz.VersionKey)
			if err != nil {
				t.Fatal(err)
			}
			return authz.WithVersion(ctx, v)
		}
		if p, err := w.az.InProject(at(), viewer.ID, w.own.ID); err != nil || p.CanWrite(authz.Jobs) {
			t.Fatalf("viewer: %v, %v; want reading only", granted(p), err)
		}
		if err := w.az.SetProjectRole(ctx, viewer, w.own, models.RoleMember); err != nil {
			t.Fatal(err)
		}
		// The next request reads the new version along with its credential.
		next := at()
		if p, err := w.az.InProject(next, viewer.ID, w.own.ID); err != nil || !p.CanWrite(authz.Jobs) {
			t.Fatalf("after the promotion: %v, %v; want writing jobs", granted(p), err)
		}
		// Asked again in that request, the permission comes without the database: a
		// context that can no longer reach it still gets its answer.
		gone := cancelled(next)
		if p, err := w.az.InProject(gone, viewer.ID, w.own.ID); err != nil || !p.CanWrite(authz.Jobs) {
			t.Fatalf("remembered at the version read: %v, %v", granted(p), err)
		}
		if _, err := w.az.InProject(gone, w.users[models.RoleMember].ID, w.own.ID); err != nil {
			t.Errorf("another user at the version read: %v", err)
		}
		if _, err := w.az.InProject(cancelled(ctx), viewer.ID, w.own.ID); err == nil {
			t.Error("without a version read, the permission was answered without reading the current one")
		}
	})
}

// What a refusal tells the caller to ask for is the weakest project role that allows it,
// and no project role for what only admins do.
func TestProjectRoleFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		obj  authz.Object
		act  authz.Action
		want string
	}{
		{authz.Jobs, authz.Read, models.RoleViewer},
		{authz.Jobs, authz.Write, models.RoleMember},
		{authz.Project, authz.Read, models.RoleViewer},
		{authz.Project, authz.Manage, models.RoleTeamLead},
		{authz.Cost, authz.Read, models.RoleViewer},
		{authz.Cost, authz.Write, ""},
		{authz.Platform, authz.Read, ""},
		{authz.Audit, authz.Read, ""},
	} {
		if got := authz.ProjectRoleFor(tc.obj, tc.act); got != tc.want {
			t.Errorf("ProjectRoleFor(%s, %s) = %q, want %q", tc.obj, tc.act, got, tc.want)
		}
	}
}
