package authz

import (
	"context"
	"fmt"
	"sync"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/model"

	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// VersionKey is the settings row that changes with every grant or policy change.
const VersionKey = "authz.version"

// Authorizer answers permission questions from a Casbin enforcer that it keeps current.
type Authorizer struct {
	store *store.Store
	audit *audit.Log

	mu      sync.Mutex
	enf     *casbin.SyncedEnforcer
	version string // of the loaded policy
	// known remembers permissions computed at version: exact, since the version
	// changes with every grant and policy change, and a new version starts afresh.
	known map[permissionKey]Permission
}

type permissionKey struct{ user, project int64 }

// maxKnown bounds the remembered permissions; past it they start afresh.
const maxKnown = 10_000

// New returns the authorizer over st, auditing grant changes to log. The policy loads on
// first use, so a database that is briefly away does not stop the process from starting.
func New(st *store.Store, log *audit.Log) *Authorizer {
	return &Authorizer{store: st, audit: log}
}

// versionRead is the policy version a request read along with its credential.
type versionRead struct{ version string }

type versionReadKey struct{}

// WithVersion returns ctx carrying the policy version (the setting VersionKey, "" when
// unset) that the caller read for this request, so that permissions asked with it read
// no version of their own: a request is answered by the policy as it was when the
// request began, as it would be by a version read a moment later.
func WithVersion(ctx context.Context, version string) context.Context {
	return context.WithValue(ctx, versionReadKey{}, versionRead{version})
}

// enforcer returns the enforcer and its policy version, loading the policy first when
// it changed since the last load.
func (a *Authorizer) enforcer(ctx context.Context) (*casbin.SyncedEnforcer, string, error) {
	version, err := a.versionOf(ctx)
	if err != nil {
		return nil, "", err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.enf != nil && a.version == version {
		return a.enf, version, nil
	}
	if a.enf == nil {
		if err := a.open(); err != nil {
			return nil, "", err
		}
	} else if err := a.enf.LoadPolicy(); err != nil {
		return nil, "", fmt.Errorf("reload authorization policy: %w", err)
	}
	a.version, a.known = version, nil
	return a.enf, version, nil
}

// versionOf is the policy version ctx carries, or the current one.
func (a *Authorizer) versionOf(ctx context.Context) (string, error) {
	if v, ok := ctx.Value(versionReadKey{}).(versionRead); ok {
		return v.version, nil
	}
	version, _, err := a.store.Setting(ctx, VersionKey)
	if err != nil {
		return "", fmt.Errorf("authorize: %w", err)
	}
	return version, nil
}

// remembered returns the permission computed for key at version, if there is one.
func (a *Authorizer) remembered(version string, key permissionKey) (Permission, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.known[key]
	return p, ok && a.version == version
}

// remember keeps p as the permission of key at version, unless the policy moved on.
func (a *Authorizer) remember(version string, key permissionKey, p Permission) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.version != version {
		return
	}
	if a.known == nil || len(a.known) >= maxKnown {
		a.known = map[permissionKey]Permission{}
	}
	a.known[key] = p
}

// open builds the enforcer and adds any default policy line the table lacks.
func (a *Authorizer) open() error {
	m, err := model.NewModelFromString(modelText)
	if err != nil {
		return fmt.Errorf("parse the authorization model: %w", err)
	}
	enf, err := casbin.NewSyncedEnforcer(m, &adapter{store: a.store})
	if err != nil {
		return fmt.Errorf("load authorization policy: %w", err)
	}
	for _, line := range DefaultPolicy() {
		if has, _ := enf.HasPolicy(line); has {
			continue
		}
		if _, err := enf.AddPolicy(line); err != nil {
			// Another replica may have added it a moment ago.
			if err := enf.LoadPolicy(); err != nil {
				return fmt.Errorf("reload authorization policy: %w", err)
			}
			if has, _ := enf.HasPolicy(line); !has {
				return fmt.Errorf("add policy line %v: %w", line, err)
			}
		}
	}
	a.enf = enf
	return nil
}
