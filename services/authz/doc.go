// Package authz decides who may do what, with Casbin's RBAC-with-domains model: the
// domain is a project ("project:7") or "*" for the whole platform. Role permissions
// (p lines) live in the casbin_rule table (store.CasbinPolicyLines); role grants
// (g lines) are read from project memberships and the users' admin and auditor flags, so
// that a grant has one home. A request computes its Permission once and asks Can(obj, act).
// Every grant change bumps a version in settings; each replica reloads when it sees a new one.
package authz
