package identity

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// OIDCConfig points Gantry at an OpenID Connect provider (Keycloak, Okta, Entra ID, Dex…).
type OIDCConfig struct {
	Issuer        string   // e.g. https://keycloak.example.com/realms/ml
	ClientID      string   // the client registered for Gantry at the provider
	ClientSecret  string   // its secret (a confidential client; PKCE is used as well)
	RedirectURL   string   // https://gantry.example.com/auth/oidc/callback, registered at the provider
	Scopes        []string // default: openid profile email
	GroupsClaim   string   // the claim listing the user's groups; default "groups"
	UsernameClaim string   // default "preferred_username"; then the e-mail, then the subject
	HTTPClient    *http.Client
}

// OIDC is a configured provider; its discovery document is fetched on first use (and again
// after a failure), so Gantry starts even when the provider is briefly away.
type OIDC struct {
	cfg OIDCConfig

	mu       sync.Mutex
	provider *oidc.Provider
	endpoint string // the provider's end_session_endpoint, if any
}

// NewOIDC checks cfg and returns the provider it describes.
func NewOIDC(cfg OIDCConfig) (*OIDC, error) {
	for _, f := range []struct{ flag, value string }{{"oidc-issuer", cfg.Issuer}, {"oidc-redirect-url", cfg.RedirectURL}} {
		u, err := url.Parse(f.value)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("--%s %q: want an http(s) URL", f.flag, f.value)
		}
	}
	if cfg.ClientID == "" {
		return nil, errors.New("--oidc-client-id is empty: give the client id registered for Gantry at the provider")
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = []string{oidc.ScopeOpenID, "profile", "email"}
	}
	if !slices.Contains(cfg.Scopes, oidc.ScopeOpenID) {
		cfg.Scopes = append([]string{oidc.ScopeOpenID}, cfg.Scopes...)
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	if cfg.UsernameClaim == "" {
		cfg.UsernameClaim = "preferred_username"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	return &OIDC{cfg: cfg}, nil
}

// context carries the HTTP client that go-oidc and oauth2 use to reach the provider.
func (o *OIDC) context(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, o.cfg.HTTPClient)
}

// discover returns the provider, fetching its discovery document when not yet known.
func (o *OIDC) discover(ctx context.Context) (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	// The provider keeps this context for later key fetches: it must outlive the request.
	p, err := oidc.NewProvider(context.WithoutCancel(o.context(ctx)), o.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("the single sign-on provider %s cannot be reached: %w", o.cfg.Issuer, err)
	}
	var meta struct {
		EndSession string `json:"end_session_endpoint"`
	}
	if err := p.Claims(&meta); err != nil {
		return nil, fmt.Errorf("read the discovery document of %s: %w", o.cfg.Issuer, err)
	}
	o.provider, o.endpoint = p, meta.EndSession
	return p, nil
}

func (o *OIDC) oauth2(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, RedirectURL: o.cfg.RedirectURL,
		Endpoint: p.Endpoint(), Scopes: o.cfg.Scopes,
	}
}

// logoutURL is the provider's end-session URL for a user signing out, or "" without one.
func (o *OIDC) logoutURL(ctx context.Context, after string) string {
	if _, err := o.discover(ctx); err != nil || o.endpoint == "" {
		return ""
	}
	u, err := url.Parse(o.endpoint)
	if err != nil {
		return ""
	}
	q := u.Query()
	q.Set("client_id", o.cfg.ClientID)
	q.Set("post_logout_redirect_uri", after)
	u.RawQuery = q.Encode()
	return u.String()
}

// afterLogout is where the provider sends the browser back to: Gantry's login page.
func (o *OIDC) afterLogout() string {
	u, _ := url.Parse(o.cfg.RedirectURL)
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/login", RawQuery: "signed_out=1"}).String()
}
