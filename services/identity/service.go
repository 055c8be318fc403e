package identity

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/store"
)

// Options tune identity; zero fields take the defaults below.
type Options struct {
	BcryptCost      int           // default 12 (also for values bcrypt refuses); tests use bcrypt.MinCost
	SessionIdle     time.Duration // a session unused this long ends; default 12h
	SessionAbsolute time.Duration // a session ends this long after login regardless; default 7 days
	FailureWindow   time.Duration // failed logins count over this window; default 15m
	MaxFailsAccount int           // failures per account in the window before refusing; default 10
	MaxFailsIP      int           // failures per source address in the window; default 30
	OIDC            *OIDC         // single sign-on; nil: off
}

func (o Options) withDefaults() Options {
	if o.BcryptCost < bcrypt.MinCost || o.BcryptCost > bcrypt.MaxCost {
		o.BcryptCost = 12
	}
	if o.SessionIdle == 0 {
		o.SessionIdle = 12 * time.Hour
	}
	if o.SessionAbsolute == 0 {
		o.SessionAbsolute = 7 * 24 * time.Hour
	}
	if o.FailureWindow == 0 {
		o.FailureWindow = 15 * time.Minute
	}
	if o.MaxFailsAccount == 0 {
		o.MaxFailsAccount = 10
	}
	if o.MaxFailsIP == 0 {
		o.MaxFailsIP = 30
	}
	return o
}

// Service authenticates people and keeps their sessions and tokens.
type Service struct {
	store *store.Store
	audit *audit.Log
	authz *authz.Authorizer
	now   func() time.Time
	opts  Options
	// decoy is a hash compared against when a username does not exist, so that a wrong
	// username takes as long as a wrong password.
	decoy func() []byte
}

// New returns the identity service over st, auditing to log and granting roles through az.
func New(st *store.Store, log *audit.Log, az *authz.Authorizer, now func() time.Time, opts Options) *Service {
	opts = opts.withDefaults()
	return &Service{store: st, audit: log, authz: az, now: now, opts: opts,
		decoy: sync.OnceValue(func() []byte {
			h, _ := bcrypt.GenerateFromPassword([]byte(randomSecret(16)), opts.BcryptCost)
			return h
		}),
	}
}

// Errors a caller answers differently; messages are safe to show.
var (
	// ErrUnauthenticated: no valid session or token; wrapped with the reason.
	ErrUnauthenticated = errors.New("not signed in")
	// ErrBadCredentials: the username or the password is wrong (which one is not said).
	ErrBadCredentials = errors.New("wrong username or password")
	// ErrDisabled: the account exists but an admin disabled it.
	ErrDisabled = errors.New("this account is disabled; ask a Gantry admin")
	// ErrLocalLoginOff: an admin turned password login off in favour of single sign-on.
	ErrLocalLoginOff = errors.New("password login is turned off: sign in with single sign-on")
	// ErrNotYours: the thing exists but belongs to another user; it is also
	// store.ErrNotFound, which is what the caller must be told.
	ErrNotYours = errors.New("it belongs to another user")
)

// RateLimitError refuses a login after too many recent failures.
type RateLimitError struct {
	Scope      string // "account" or "address"
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	minutes := int(math.Ceil(e.RetryAfter.Minutes()))
	if minutes == 1 {
		return fmt.Sprintf("too many failed logins for this %s: try again in a minute", e.Scope)
	}
	return fmt.Sprintf("too many failed logins for this %s: try again in %d minutes", e.Scope, minutes)
}
