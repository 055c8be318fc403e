package authz

import (
	"context"
	"fmt"
	"slices"
)

// Permission is what one user may do in one project (or platform-wide), computed once per
// request; handlers ask it questions instead of checking roles themselves.
type Permission struct {
	UserID    int64
	ProjectID int64    // 0: platform-wide
	Roles     []string // the roles that apply: held in the project, and global ones
	granted   map[grant]bool
}

type grant struct {
	obj Object
	act Action
}

// Can reports whether act on obj is allowed.
func (p Permission) Can(obj Object, act Action) bool { return p.granted[grant{obj, act}] }

// CanRead reports whether obj may be seen.
func (p Permission) CanRead(obj Object) bool { return p.Can(obj, Read) }

// CanWrite reports whether obj may be changed.
func (p Permission) CanWrite(obj Object) bool { return p.Can(obj, Write) }

// CanManage reports whether roles on obj may be granted and revoked.
func (p Permission) CanManage(obj Object) bool { return p.Can(obj, Manage) }

// ReadOnly returns p without anything but reading: what a read-scoped API token gets.
func (p Permission) ReadOnly() Permission {
	out := p
	out.granted = map[grant]bool{}
	for g, ok := range p.granted {
		if ok && g.act == Read {
			out.granted[g] = true
		}
	}
	return out
}

// Global returns what the user may do platform-wide.
func (a *Authorizer) Global(ctx context.Context, userID int64) (Permission, error) {
	return a.permission(ctx, userID, 0)
}

// InProject returns what the user may do in the project.
func (a *Authorizer) InProject(ctx context.Context, userID, projectID int64) (Permission, error) {
	return a.permission(ctx, userID, projectID)
}

// permission computes (or recalls, at the same policy version) what the user may do in
// the project: fifteen Casbin decisions that every request would otherwise repeat.
func (a *Authorizer) permission(ctx context.Context, userID, projectID int64) (Permission, error) {
	enf, version, err := a.enforcer(ctx)
	if err != nil {
		return Permission{}, err
	}
	key := permissionKey{userID, projectID}
	if p, ok := a.remembered(version, key); ok {
		// Callers may append to Roles; granted is only read.
		p.Roles = slices.Clone(p.Roles)
		return p, nil
	}
	sub, dom := userSubject(userID), global
	if projectID != 0 {
		dom = projectDomain(projectID)
	}
	p := Permission{UserID: userID, ProjectID: projectID, granted: map[grant]bool{}}
	p.Roles = enf.GetRolesForUserInDomain(sub, global)
	if dom != global {
		p.Roles = append(p.Roles, enf.GetRolesForUserInDomain(sub, dom)...)
	}
	slices.Sort(p.Roles)
	for _, obj := range Objects() {
		for _, act := range Actions() {
			ok, err := enf.Enforce(sub, dom, string(obj), string(act))
			if err != nil {
				return Permission{}, fmt.Errorf("authorize %s %s in %s: %w", act, obj, dom, err)
			}
			if ok {
				p.granted[grant{obj, act}] = true
			}
		}
	}
	a.remember(version, key, p)
	p.Roles = slices.Clone(p.Roles)
	return p, nil
}
