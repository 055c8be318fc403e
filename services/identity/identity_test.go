package identity_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type env struct {
	st    *store.Store
	clock *clock
	log   *audit.Log
	az    *authz.Authorizer
	id    *identity.Service
}

func newEnv(t testing.TB, st *store.Store, opts identity.Options) *env {
	c := &clock{t: time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC)}
	log := audit.New(st, c.now)
	az := authz.New(st, log)
	opts.BcryptCost = bcrypt.MinCost
	return &env{st: st, clock: c, log: log, az: az, id: identity.New(st, log, az, c.now, opts)}
}

// from is a request context from an address.
func from(ip string) context.Context {
	return audit.WithActor(context.Background(), audit.Actor{Name: "anonymous", Type: models.ActorUser, IP: ip, RequestID: "r-1"})
}

func TestBootstrapOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newEnv(t, st, identity.Options{})
		password, err := e.id.Bootstrap(ctx)
		if err != nil || len(password) < 20 {
			t.Fatalf("bootstrap = %q, %v", password, err)
		}
		again, err := e.id.Bootstrap(ctx)
		if err != nil || again != "" {
			t.Fatalf("second bootstrap = %q, %v; want nothing", again, err)
		}
		admin, err := st.UserByUsernameWithPassword(ctx, identity.AdminUser)
		if err != nil || !admin.IsAdmin || strings.Contains(admin.PasswordHash, password) || !strings.HasPrefix(admin.PasswordHash, "$2") {
			t.Fatalf("admin = %+v, %v; want an admin with a bcrypt hash", admin, err)
		}
		project, err := st.ProjectByName(ctx, identity.DefaultProject)
		if err != nil || project.DefaultImageID == nil {
			t.Fatalf("default project = %+v, %v", project, err)
		}
		img, err := st.ImageByName(ctx, identity.PlainImage)
		if err != nil || !img.Builtin || img.ID != *project.DefaultImageID || img.Status != models.ImageCertified {
			t.Fatalf("plain image = %+v, %v", img, err)
		}
		perm, err := e.az.InProject(ctx, admin.ID, project.ID)
		if err != nil || !slicesEqual(perm.Roles, []string{models.RoleAdmin, models.RoleTeamLead}) {
			t.Fatalf("admin roles in default = %v, %v", perm.Roles, err)
		}
		if _, err := e.id.LoginLocal(from("192.0.2.1"), identity.AdminUser, password); err != nil {
			t.Fatalf("the printed password does not log in: %v", err)
		}
		if n, _ := st.CountAuditEvents(ctx, store.AuditFilter{Action: "system.bootstrapped", Actor: "system"}); n != 1 {
			t.Errorf("bootstrap audited %d times, want once", n)
		}
		if _, err := e.log.Verify(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func slicesEqual(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

func TestLocalLoginAndRateLimits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newEnv(t, st, identity.Options{MaxFailsAccount: 3, MaxFailsIP: 5, FailureWindow: 10 * time.Minute})
		password, err := e.id.Bootstrap(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := e.id.LoginLocal(from("192.0.2.1"), "admin", "guess"); !errors.Is(err, identity.ErrBadCredentials) {
				t.Fatalf("wrong password: %v", err)
			}
			e.clock.advance(time.Minute)
		}
		// The account is locked now, even with the right password, from anywhere.
		_, err = e.id.LoginLocal(from("198.51.100.9"), "admin", password)
		var rl *identity.RateLimitError
		if !errors.As(err, &rl) || rl.Scope != "account" || rl.RetryAfter != 7*time.Minute {
			t.Fatalf("locked account: %v, want a rate limit of 7 more minutes", err)
		}
		if !strings.Contains(err.Error(), "try again in 7 minutes") {
			t.Errorf("message %q does not say when", err)
		}
		e.clock.advance(7 * time.Minute)
		if _, err := e.id.LoginLocal(from("198.51.100.9"), "admin", password); err != nil {
			t.Fatalf("after the window: %v", err)
		}
		// An address that tries many usernames is stopped, for every username.
		for i := range 5 {
			if _, err := e.id.LoginLocal(from("203.0.113.5"), "user"+string(rune('a'+i)), "x"); !errors.Is(err, identity.ErrBadCredentials) {
				t.Fatalf("unknown user: %v", err)
			}
		}
		if _, err := e.id.LoginLocal(from("203.0.113.5"), "admin", password); !errors.As(err, &rl) || rl.Scope != "address" {
			t.Fatalf("busy address: %v, want refused", err)
		}
		counts := map[string]int64{}
		for _, a := range []string{identity.ActionLogin, identity.ActionLoginFailed, identity.ActionLoginRefused} {
			counts[a], _ = st.CountAuditEvents(ctx, store.AuditFilter{Action: a})
		}
		if counts[identity.ActionLogin] != 1 || counts[identity.ActionLoginFailed] != 8 || counts[identity.ActionLoginRefused] != 2 {
			t.Errorf("audited logins = %v", counts)
		}
		refused, _ := e.log.Events(ctx, store.AuditFilter{Action: identity.ActionLoginRefused, SourceIP: "203.0.113.5"}, 0, 1)
		if len(refused.Events) != 1 || refused.Events[0].Actor != "admin" || !strings.Contains(refused.Events[0].Detail, "too many failed logins for this address") {
			t.Errorf("refusal audited as %+v", refused.Events)
		}
	})
}

func TestLoginRefusesDisabledAndSSOUsersAndWhenOff(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	ctx := context.Background()
	e := newEnv(t, st, identity.Options{})
	password, err := e.id.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sso := &models.User{Username: "carol", Issuer: "https://idp.example.com", Subject: "c-1"}
	if err := st.CreateUser(ctx, sso); err != nil {
		t.Fatal(err)
	}
	if _, err := e.id.LoginLocal(from("192.0.2.1"), "carol", ""); !errors.Is(err, identity.ErrBadCredentials) {
		t.Errorf("SSO user with an empty password: %v", err)
	}
	var fe *models.FieldError
	if _, err := e.id.ResetPassword(ctx, "carol"); !errors.As(err, &fe) || !strings.Contains(fe.Message, "single sign-on") {
		t.Errorf("reset an SSO user's password: %v", err)
	}
	if err := e.id.SetLocalLogin(ctx, false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.id.LoginLocal(from("192.0.2.1"), "admin", password); !errors.Is(err, identity.ErrLocalLoginOff) {
		t.Errorf("password login while off: %v", err)
	}
	if err := e.id.SetLocalLogin(ctx, true); err != nil {
		t.Fatal(err)
	}
	admin, _ := st.UserByUsername(ctx, "admin")
	admin.Disabled = true
	if err := st.UpdateUser(ctx, admin); err != nil {
		t.Fatal(err)
	}
	if _, err := e.id.LoginLocal(from("192.0.2.1"), "admin", password); !errors.Is(err, identity.ErrDisabled) {
		t.Errorf("disabled admin: %v", err)
	}
}

func TestSessionsExpireRotateAndEnd(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := from("192.0.2.1")
		e := newEnv(t, st, identity.Options{SessionIdle: time.Hour, SessionAbsolute: 3 * time.Hour})
		password, err := e.id.Bootstrap(ctx)
		if err != nil {
			t.Fatal(err)
		}
		admin, err := e.id.LoginLocal(ctx, "admin", password)
		if err != nil {
			t.Fatal(err)
		}
		cookie, sess, err := e.id.StartSession(ctx, admin, "", "test-agent")
		if err != nil || sess.IP != "192.0.2.1" || sess.CSRFToken == "" || sess.ID == cookie {
			t.Fatalf("session = %+v, %v; the database must hold a hash, not the cookie", sess, err)
		}
		p, err := e.id.Session(ctx, cookie)
		if err != nil || p.User.ID != admin.ID || p.Session.CSRFToken != sess.CSRFToken || p.ReadOnly() {
			t.Fatalf("session lookup = %+v, %v", p, err)
		}
		// Used every 50 minutes, the session outlives its idle timeout, up to its absolute one.
		for range 3 {
			e.clock.advance(50 * time.Minute)
			if _, err := e.id.Session(ctx, cookie); err != nil {
				t.Fatalf("session in use: %v", err)
			}
		}
		e.clock.advance(31 * time.Minute)
		if _, err := e.id.Session(ctx, cookie); !errors.Is(err, identity.ErrUnauthenticated) || !strings.Contains(err.Error(), "at most 3h0m0s") {
			t.Fatalf("past the absolute timeout: %v", err)
		}
		cookie, _, _ = e.id.StartSession(ctx, admin, "", "")
		e.clock.advance(61 * time.Minute)
		if _, err := e.id.Session(ctx, cookie); !errors.Is(err, identity.ErrUnauthenticated) || !strings.Contains(err.Error(), "without use") {
			t.Fatalf("past the idle timeout: %v", err)
		}
		// Logging in again ends the session the browser came with.
		first, _, _ := e.id.StartSession(ctx, admin, "", "")
		second, _, _ := e.id.StartSession(ctx, admin, first, "")
		if _, err := e.id.Session(ctx, first); !errors.Is(err, identity.ErrUnauthenticated) {
			t.Fatalf("the pre-login session survived: %v", err)
		}
		for _, bad := range []string{"", "short", second[:42], second + "A", second[:42] + "!", second[:42] + "+", second[:42] + "=", "é" + second[:41]} {
			if _, err := e.id.Session(ctx, bad); !errors.Is(err, identity.ErrUnauthenticated) || !strings.Contains(err.Error(), "malformed") {
				t.Errorf("cookie %q: %v, want a malformed cookie", bad, err)
			}
		}
		if _, err := e.id.Session(ctx, strings.Repeat("A", 21)+"-_"+strings.Repeat("z9", 10)); !errors.Is(err, identity.ErrUnauthenticated) || !strings.Contains(err.Error(), "unknown") {
			t.Errorf("a well-shaped cookie of no session: %v, want an unknown session", err)
		}
		p, err = e.id.Session(ctx, second)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.id.EndSession(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := e.id.Session(ctx, second); !errors.Is(err, identity.ErrUnauthenticated) {
			t.Fatalf("after logout: %v", err)
		}
		// Resetting a password ends every session; a disabled user's cookie stops working.
		third, _, _ := e.id.StartSession(ctx, admin, "", "")
		newPassword, err := e.id.ResetPassword(ctx, "admin")
		if err != nil || newPassword == password {
			t.Fatalf("reset = %q, %v", newPassword, err)
		}
		if _, err := e.id.Session(ctx, third); !errors.Is(err, identity.ErrUnauthenticated) {
			t.Fatalf("a session survived the password reset: %v", err)
		}
		if _, err := e.id.LoginLocal(ctx, "admin", newPassword); err != nil {
			t.Fatal(err)
		}
		fourth, _, _ := e.id.StartSession(ctx, admin, "", "")
		admin.Disabled = true
		if err := st.UpdateUser(context.Background(), admin); err != nil {
			t.Fatal(err)
		}
		if _, err := e.id.Session(ctx, fourth); !errors.Is(err, identity.ErrUnauthenticated) || !strings.Contains(err.Error(), "disabled") {
			t.Fatalf("disabled user's session: %v", err)
		}
		if n, _ := st.CountAuditEvents(context.Background(), store.AuditFilter{Action: "logout"}); n != 1 {
			t.Errorf("logouts audited: %d", n)
		}
	})
}

// The user a session or an API token signs in as carries no password hash, and saving
// it back (as a service given the signed-in user might) keeps the password working.
func TestSignedInUserSavedBackKeepsThePassword(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := from("192.0.2.1")
		e := newEnv(t, st, identity.Options{})
		password, err := e.id.Bootstrap(ctx)
		if err != nil {
			t.Fatal(err)
		}
		admin, err := e.id.LoginLocal(ctx, "admin", password)
		if err != nil {
			t.Fatal(err)
		}
		if admin.PasswordHash != "" {
			t.Error("LoginLocal returned the password hash to its caller")
		}
		cookie, _, err := e.id.StartSession(ctx, admin, "", "test-agent")
		if err != nil {
			t.Fatal(err)
		}
		secret, _, err := e.id.CreateToken(ctx, admin, "ci", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		bySession, err := e.id.Session(ctx, cookie)
		if err != nil {
			t.Fatal(err)
		}
		byToken, err := e.id.Token(ctx, secret)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []*identity.Principal{bySession, byToken} {
			if p.User.PasswordHash != "" {
				t.Errorf("signed-in user carries the password hash %q", p.User.PasswordHash)
			}
			p.User.DisplayName = "Admin"
			if err := st.UpdateUser(ctx, p.User); err != nil {
				t.Fatal(err)
			}
			if err := e.az.SetGlobalRoles(ctx, p.User, true, !p.User.IsAuditor); err != nil {
				t.Fatal(err)
			}
			if p.User.PasswordHash != "" {
				t.Error("SetGlobalRoles copied the password hash into the signed-in user")
			}
			if _, err := e.id.LoginLocal(ctx, "admin", password); err != nil {
				t.Fatalf("password login after saving the signed-in user: %v", err)
			}
		}
	})
}
