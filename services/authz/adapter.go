package authz

import (
	"context"
	"errors"

	"github.com/casbin/casbin/v2/model"
	"github.com/casbin/casbin/v2/persist"

	"github.com/gantry-gpu/gantry/services/store"
)

// errGrantsAreMemberships refuses writing g lines through Casbin: grants are memberships.
var errGrantsAreMemberships = errors.New("role grants are project memberships and user roles: change them with SetProjectRole or SetGlobalRoles")

// adapter loads p lines from the store's casbin_rule table and g lines from the grants
// in the store, so that Casbin sees one policy while each grant has one home.
type adapter struct{ store *store.Store }

func (a *adapter) LoadPolicy(m model.Model) error {
	lines, err := a.store.CasbinPolicyLines(context.Background())
	if err != nil {
		return err
	}
	for _, line := range lines {
		if err := persist.LoadPolicyArray(line, m); err != nil {
			return err
		}
	}
	grants, err := a.store.Grants(context.Background())
	if err != nil {
		return err
	}
	for _, g := range grants {
		dom := global
		if g.ProjectID != 0 {
			dom = projectDomain(g.ProjectID)
		}
		if err := persist.LoadPolicyArray([]string{"g", userSubject(g.UserID), g.Role, dom}, m); err != nil {
			return err
		}
	}
	return nil
}

func (a *adapter) SavePolicy(model.Model) error {
	return errors.New("saving the whole policy is not supported: change lines one by one")
}

func (a *adapter) AddPolicy(sec, ptype string, rule []string) error {
	if sec == "g" {
		return errGrantsAreMemberships
	}
	return a.store.AddCasbinPolicyLine(context.Background(), ptype, rule)
}

func (a *adapter) RemovePolicy(sec, ptype string, rule []string) error {
	if sec == "g" {
		return errGrantsAreMemberships
	}
	return a.store.DeleteCasbinPolicyLines(context.Background(), ptype, 0, rule...)
}

func (a *adapter) RemoveFilteredPolicy(sec, ptype string, fieldIndex int, fieldValues ...string) error {
	if sec == "g" {
		return errGrantsAreMemberships
	}
	return a.store.DeleteCasbinPolicyLines(context.Background(), ptype, fieldIndex, fieldValues...)
}
