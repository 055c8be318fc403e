package authz

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// In returns an authorizer whose grant changes join the caller's transaction tx. Ask
// permissions of the original: this one does not cache a policy.
func (a *Authorizer) In(tx *store.Store) *Authorizer {
	return &Authorizer{store: tx, audit: a.audit.In(tx)}
}

// SetProjectRole gives the user role in the project, replacing the role they had there,
// and audits the change; the same role again changes nothing and records nothing.
func (a *Authorizer) SetProjectRole(ctx context.Context, user *models.User, project *models.Project, role string) error {
	if !slices.Contains(models.ProjectRoles, role) {
		return models.Invalid("role", "%q is not a project role: want one of %v", role, models.ProjectRoles)
	}
	return a.store.InTx(ctx, func(tx *store.Store) error {
		previous := ""
		m, err := tx.MembershipOf(ctx, user.ID, project.ID)
		switch {
		case err == nil:
			previous = m.Role
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		if previous == role {
			return nil
		}
		if err := tx.SetMembership(ctx, user.ID, project.ID, role); err != nil {
			return err
		}
		detail := map[string]string{"user": user.Username, "project": project.Name, "role": role}
		if previous != "" {
			detail["previous"] = previous
		}
		return a.changed(ctx, tx, audit.Entry{Action: "role.granted", ObjectType: "user", ObjectID: user.Username, ProjectID: &project.ID, Detail: detail})
	})
}

// RemoveFromProject takes away the user's role in the project; a non-member is store.ErrNotFound.
func (a *Authorizer) RemoveFromProject(ctx context.Context, user *models.User, project *models.Project) error {
	return a.store.InTx(ctx, func(tx *store.Store) error {
		m, err := tx.MembershipOf(ctx, user.ID, project.ID)
		if err != nil {
			return err
		}
		if err := tx.DeleteMembership(ctx, user.ID, project.ID); err != nil {
			return err
		}
		detail := map[string]string{"user": user.Username, "project": project.Name, "previous": m.Role}
		return a.changed(ctx, tx, audit.Entry{Action: "role.revoked", ObjectType: "user", ObjectID: user.Username, ProjectID: &project.ID, Detail: detail})
	})
}

// SetGlobalRoles makes the user an admin and an auditor, or not, auditing each change.
func (a *Authorizer) SetGlobalRoles(ctx context.Context, user *models.User, admin, auditor bool) error {
	return a.store.InTx(ctx, func(tx *store.Store) error {
		fresh, err := tx.UserByID(ctx, user.ID)
		if err != nil {
			return err
		}
		var entries []audit.Entry
		for _, r := range []struct {
			role     string
			has, set bool
		}{{models.RoleAdmin, fresh.IsAdmin, admin}, {models.RoleAuditor, fresh.IsAuditor, auditor}} {
			if r.has == r.set {
				continue
			}
			action := "role.revoked"
			if r.set {
				action = "role.granted"
			}
			entries = append(entries, audit.Entry{Action: action, ObjectType: "user", ObjectID: fresh.Username,
				Detail: map[string]string{"user": fresh.Username, "role": r.role, "scope": "global"}})
		}
		if len(entries) == 0 {
			return nil
		}
		fresh.IsAdmin, fresh.IsAuditor = admin, auditor
		if err := tx.UpdateUser(ctx, fresh); err != nil {
			return err
		}
		*user = *fresh
		return a.changed(ctx, tx, entries...)
	})
}

// PolicyChanged tells every replica to reload: call it in the transaction of any change
// to users or memberships made outside this package (disabling a user, say).
func PolicyChanged(ctx context.Context, tx *store.Store) error {
	if err := tx.PutSetting(ctx, VersionKey, newVersion()); err != nil {
		return fmt.Errorf("bump authorization version: %w", err)
	}
	return nil
}

// changed bumps the policy version and audits entries, in tx.
func (a *Authorizer) changed(ctx context.Context, tx *store.Store, entries ...audit.Entry) error {
	if err := PolicyChanged(ctx, tx); err != nil {
		return err
	}
	return a.audit.In(tx).AppendAll(ctx, entries)
}
