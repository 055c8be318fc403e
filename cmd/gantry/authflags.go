package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/bcrypt"

	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
)

// authOpts are serve's sign-in flags: sessions, proxies, and single sign-on.
type authOpts struct {
	publicURL      string
	trustedProxies []string
	bcryptCost     int
	sessionIdle    time.Duration
	sessionMax     time.Duration
	oidc           identity.OIDCConfig
	oidcScopes     []string
	metricsToken   string
}

// minMetricsToken is the shortest metrics token serve accepts: a guessable one would
// hand out the names of every job, project and team.
const minMetricsToken = 16

func (o *authOpts) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.publicURL, "public-url", "", "the URL people reach Gantry at, e.g. https://gantry.example.com (https makes cookies Secure behind a TLS proxy)")
	f.StringSliceVar(&o.trustedProxies, "trusted-proxies", nil, "addresses or CIDRs of proxies whose X-Forwarded-For names the client (none by default)")
	f.IntVar(&o.bcryptCost, "bcrypt-cost", 12, fmt.Sprintf("bcrypt cost of stored passwords (%d-%d)", bcrypt.MinCost, bcrypt.MaxCost))
	f.DurationVar(&o.sessionIdle, "session-idle", 12*time.Hour, "a browser session unused this long ends")
	f.DurationVar(&o.sessionMax, "session-lifetime", 7*24*time.Hour, "a browser session ends this long after sign-in, used or not")
	f.StringVar(&o.oidc.Issuer, "oidc-issuer", "", "OpenID Connect issuer URL; empty turns single sign-on off")
	f.StringVar(&o.oidc.ClientID, "oidc-client-id", "", "client id registered for Gantry at the provider")
	f.StringVar(&o.oidc.ClientSecret, "oidc-client-secret", "", "client secret (prefer GANTRY_OIDC_CLIENT_SECRET over the command line)")
	f.StringVar(&o.oidc.RedirectURL, "oidc-redirect-url", "", "callback URL registered at the provider; default --public-url + /auth/oidc/callback")
	f.StringSliceVar(&o.oidcScopes, "oidc-scopes", []string{"openid", "profile", "email"}, "scopes to ask for, e.g. openid,profile,email,groups")
	f.StringVar(&o.oidc.GroupsClaim, "oidc-groups-claim", "groups", "ID token or userinfo claim that lists the user's groups")
	f.StringVar(&o.oidc.UsernameClaim, "oidc-username-claim", "preferred_username", "claim that names the user (then the e-mail, then the subject)")
	f.StringVar(&o.metricsToken, "metrics-token", "", "Bearer token a scrape of /metrics must send; empty: /metrics is public (prefer GANTRY_METRICS_TOKEN over the command line)")
}

// options checks the flags and returns identity's options and whether cookies must be Secure.
func (o *authOpts) options() (identity.Options, bool, error) {
	var opts identity.Options
	secure := false
	if o.publicURL != "" {
		u, err := url.Parse(o.publicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return opts, false, usageError{fmt.Errorf("--public-url %q: want http(s)://HOST[:PORT]", o.publicURL)}
		}
		secure = u.Scheme == "https"
	}
	for _, p := range o.trustedProxies {
		if net.ParseIP(p) == nil {
			if _, _, err := net.ParseCIDR(p); err != nil {
				return opts, false, usageError{fmt.Errorf("--trusted-proxies %q: want an IP address or a CIDR such as 10.0.0.0/8", p)}
			}
		}
	}
	if o.bcryptCost < bcrypt.MinCost || o.bcryptCost > bcrypt.MaxCost {
		return opts, false, usageError{fmt.Errorf("--bcrypt-cost %d: want %d to %d", o.bcryptCost, bcrypt.MinCost, bcrypt.MaxCost)}
	}
	if o.sessionIdle <= 0 || o.sessionMax <= 0 || o.sessionIdle > o.sessionMax {
		return opts, false, usageError{fmt.Errorf("--session-idle %s and --session-lifetime %s: want positive durations, idle no longer than the lifetime", o.sessionIdle, o.sessionMax)}
	}
	if t := o.metricsToken; t != "" && (len(t) < minMetricsToken || strings.ContainsFunc(t, func(r rune) bool { return r <= ' ' || r == 0x7f })) {
		return opts, false, usageError{fmt.Errorf("--metrics-token: want at least %d characters without spaces or control characters, e.g. from: openssl rand -hex 32", minMetricsToken)}
	}
	opts = identity.Options{BcryptCost: o.bcryptCost, SessionIdle: o.sessionIdle, SessionAbsolute: o.sessionMax}
	if o.oidc.Issuer == "" {
		return opts, secure, nil
	}
	cfg := o.oidc
	cfg.Scopes = o.oidcScopes
	if cfg.RedirectURL == "" && o.publicURL != "" {
		cfg.RedirectURL = strings.TrimSuffix(o.publicURL, "/") + "/auth/oidc/callback"
	}
	if cfg.RedirectURL == "" {
		return opts, false, usageError{fmt.Errorf("--oidc-issuer needs --oidc-redirect-url or --public-url to know where the provider sends people back")}
	}
	p, err := identity.NewOIDC(cfg)
	if err != nil {
		return opts, false, usageError{err}
	}
	opts.OIDC = p
	return opts, secure, nil
}

// bootstrap readies an empty database and prints the first admin's password, once.
func bootstrap(ctx context.Context, w io.Writer, st *store.Store, opts identity.Options) error {
	al := audit.New(st, time.Now)
	password, err := identity.New(st, al, authz.New(st, al), time.Now, opts).Bootstrap(ctx)
	if err != nil || password == "" {
		return err
	}
	fmt.Fprintf(w, "First start: created user %q (admin) with password %s\n", identity.AdminUser, password)
	fmt.Fprintf(w, "The password is shown only now. Reset it with: gantry admin reset-password %s\n", identity.AdminUser)
	return nil
}
