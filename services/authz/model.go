package authz

import (
	"crypto/rand"
	"strconv"

	"github.com/gantry-gpu/gantry/models"
)

// Object is what a permission is about.
type Object string

// Objects of permissions. Project-scoped ones are checked in a project's domain; Audit and
// Platform only globally.
const (
	Project  Object = "project"  // a project, its settings and its members
	Jobs     Object = "jobs"     // the project's jobs, their logs and metrics
	Cost     Object = "cost"     // what the project spends
	Audit    Object = "audit"    // the audit log
	Platform Object = "platform" // the admin console: people, teams, nodes, images, quotas, settings
)

// Action is what is done to an object.
type Action string

// Actions, from weakest to strongest.
const (
	Read   Action = "read"
	Write  Action = "write"
	Manage Action = "manage" // grant and revoke roles
)

// Objects lists every object, for computing a Permission in full.
func Objects() []Object { return []Object{Project, Jobs, Cost, Audit, Platform} }

// Actions lists every action.
func Actions() []Action { return []Action{Read, Write, Manage} }

// modelText is the Casbin model: RBAC with domains, where a role held in "*" (admin,
// auditor) counts in every domain, and a policy line with domain "*" holds wherever the
// role is held.
const modelText = `
[request_definition]
r = sub, dom, obj, act

[policy_definition]
p = sub, dom, obj, act

[role_definition]
g = _, _, _

[policy_effect]
e = some(where (p.eft == allow))

[matchers]
m = (g(r.sub, p.sub, r.dom) || g(r.sub, p.sub, "*")) && (p.dom == "*" || p.dom == r.dom) && (p.obj == "*" || p.obj == r.obj) && (p.act == "*" || p.act == r.act)
`

// DefaultPolicy is the role matrix every installation starts with, as Casbin p lines
// (role, domain, object, action); missing lines are added at load, so a newer Gantry
// brings its new permissions along.
func DefaultPolicy() [][]string {
	lines := [][]string{
		{models.RoleAdmin, "*", "*", "*"},
		{models.RoleAuditor, "*", "*", string(Read)},
	}
	for _, r := range []struct {
		role string
		obj  Object
		act  Action
	}{
		{models.RoleTeamLead, Project, Read}, {models.RoleTeamLead, Project, Manage},
		{models.RoleTeamLead, Jobs, Read}, {models.RoleTeamLead, Jobs, Write}, {models.RoleTeamLead, Cost, Read},
		{models.RoleMember, Project, Read}, {models.RoleMember, Jobs, Read}, {models.RoleMember, Jobs, Write}, {models.RoleMember, Cost, Read},
		{models.RoleViewer, Project, Read}, {models.RoleViewer, Jobs, Read}, {models.RoleViewer, Cost, Read},
	} {
		lines = append(lines, []string{r.role, "*", string(r.obj), string(r.act)})
	}
	return lines
}

func userSubject(id int64) string { return "user:" + strconv.FormatInt(id, 10) }

// global is the domain of platform-wide roles and checks.
const global = "*"

func projectDomain(id int64) string { return "project:" + strconv.FormatInt(id, 10) }

// newVersion names a policy state; any change writes a new one.
func newVersion() string { return rand.Text() }

// ProjectRoleFor is the weakest project role (viewer, member, team lead) that the
// default role matrix lets act on obj, or "" when only a Gantry-wide role does: what a
// refusal tells the caller to ask for.
func ProjectRoleFor(obj Object, act Action) string {
	for _, role := range []string{models.RoleViewer, models.RoleMember, models.RoleTeamLead} {
		for _, l := range DefaultPolicy() {
			if l[0] == role && (l[2] == "*" || l[2] == string(obj)) && (l[3] == "*" || l[3] == string(act)) {
				return role
			}
		}
	}
	return ""
}
