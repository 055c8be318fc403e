package identity

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
)

// ssoFlowTTL bounds how long a sign-in may sit at the provider's login page.
const ssoFlowTTL = 10 * time.Minute

// cookieKeyName is the setting holding the key that signs the single sign-on state cookie;
// it is shared by every replica, since the callback may reach any of them.
const cookieKeyName = "auth.cookie_key"

// ErrSSO: the single sign-on did not complete; wrapped with the reason, which is safe to show.
var ErrSSO = errors.New("single sign-on failed")

// ssoFlow is what the browser carries, signed, from the start of a sign-in to the callback.
type ssoFlow struct {
	State    string    `json:"s"`
	Nonce    string    `json:"n"`
	Verifier string    `json:"v"` // the PKCE code verifier
	Next     string    `json:"x"`
	Expires  time.Time `json:"e"`
}

// SSOEnabled reports whether single sign-on is configured.
func (s *Service) SSOEnabled() bool { return s.opts.OIDC != nil }

// BeginSSO starts a sign-in at the provider: it returns the URL to send the browser to and
// the value of the cookie the browser must bring back to the callback.
func (s *Service) BeginSSO(ctx context.Context, next string) (redirect, cookie string, err error) {
	o := s.opts.OIDC
	if o == nil {
		return "", "", fmt.Errorf("%w: single sign-on is not configured", ErrSSO)
	}
	p, err := o.discover(ctx)
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrSSO, err)
	}
	flow := ssoFlow{State: randomSecret(24), Nonce: randomSecret(24), Verifier: oauth2.GenerateVerifier(), Next: next, Expires: s.now().Add(ssoFlowTTL)}
	cookie, err = s.seal(ctx, flow)
	if err != nil {
		return "", "", err
	}
	redirect = o.oauth2(p).AuthCodeURL(flow.State, oidc.Nonce(flow.Nonce), oauth2.S256ChallengeOption(flow.Verifier))
	return redirect, cookie, nil
}

// Callback is what the provider sent the browser back with, and the browser's flow cookie.
type Callback struct {
	Cookie           string
	State            string
	Code             string
	Error            string // the provider's error code, e.g. access_denied
	ErrorDescription string
}

// FinishSSO completes a sign-in at the callback: it checks the state against the cookie,
// exchanges the code (with the PKCE verifier), verifies the ID token (signature, issuer,
// audience, expiry, nonce), provisions or updates the user, applies group mappings and
// returns the user with where the browser was headed. Every outcome is audited.
func (s *Service) FinishSSO(ctx context.Context, cb Callback) (*models.User, string, error) {
	o := s.opts.OIDC
	if o == nil {
		return nil, "", fmt.Errorf("%w: single sign-on is not configured", ErrSSO)
	}
	if cb.Error != "" {
		return nil, "", s.ssoRefused(ctx, fmt.Errorf("the provider answered %s %s", cb.Error, cb.ErrorDescription))
	}
	flow, err := s.open(ctx, cb.Cookie)
	if err != nil {
		return nil, "", s.ssoRefused(ctx, err)
	}
	state, code := cb.State, cb.Code
	if subtle.ConstantTimeCompare([]byte(state), []byte(flow.State)) != 1 {
		return nil, "", s.ssoRefused(ctx, errors.New("the state returned by the provider does not match this browser's sign-in"))
	}
	p, err := o.discover(ctx)
	if err != nil {
		return nil, "", s.ssoRefused(ctx, err)
	}
	octx := o.context(ctx)
	tok, err := o.oauth2(p).Exchange(octx, code, oauth2.VerifierOption(flow.Verifier))
	if err != nil {
		return nil, "", s.ssoRefused(ctx, fmt.Errorf("the provider refused the authorization code: %w", oauth2Reason(err)))
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, "", s.ssoRefused(ctx, errors.New("the provider sent no ID token"))
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID, Now: s.now}).Verify(octx, raw)
	if err != nil {
		return nil, "", s.ssoRefused(ctx, fmt.Errorf("the ID token is not valid: %w", err))
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(flow.Nonce)) != 1 {
		return nil, "", s.ssoRefused(ctx, errors.New("the ID token's nonce does not match this browser's sign-in"))
	}
	c, err := o.claims(octx, p, idt, tok)
	if err != nil {
		return nil, "", s.ssoRefused(ctx, err)
	}
	u, err := s.provision(ctx, idt.Issuer, c)
	if err != nil {
		return nil, "", err
	}
	return u, flow.Next, nil
}

// ssoRefused audits a failed sign-in and returns the reason as an ErrSSO.
func (s *Service) ssoRefused(ctx context.Context, reason error) error {
	err := fmt.Errorf("%w: %v", ErrSSO, reason)
	if aerr := s.audit.Append(ctx, audit.Entry{Action: ActionLoginFailed, ObjectType: "user", ObjectID: audit.ActorFrom(ctx).Name,
		Detail: map[string]string{"method": "oidc", "reason": reason.Error()}}); aerr != nil {
		return aerr
	}
	return err
}

// EndSessionURL is where to send a signed-out single sign-on user so that the provider's
// session ends too; "" for local users or a provider without an end-session endpoint.
func (s *Service) EndSessionURL(ctx context.Context, u *models.User) string {
	o := s.opts.OIDC
	if o == nil || u.Issuer == "" {
		return ""
	}
	return o.logoutURL(ctx, o.afterLogout())
}

// seal signs flow into a cookie value: base64(JSON) "." base64(HMAC-SHA256).
func (s *Service) seal(ctx context.Context, flow ssoFlow) (string, error) {
	key, err := s.cookieKey(ctx)
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(flow)
	if err != nil {
		return "", err
	}
	payload := base64.RawURLEncoding.EncodeToString(body)
	return payload + "." + base64.RawURLEncoding.EncodeToString(sign(key, payload)), nil
}

// open checks the signature and freshness of a flow cookie.
func (s *Service) open(ctx context.Context, cookie string) (ssoFlow, error) {
	var flow ssoFlow
	payload, mac, ok := strings.Cut(cookie, ".")
	if !ok {
		return flow, errors.New("this browser has no sign-in in progress (its cookie is missing): start again")
	}
	key, err := s.cookieKey(ctx)
	if err != nil {
		return flow, err
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil || !hmac.Equal(got, sign(key, payload)) {
		return flow, errors.New("the sign-in cookie was tampered with")
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(body, &flow) != nil {
		return flow, errors.New("the sign-in cookie is malformed")
	}
	if !s.now().Before(flow.Expires) {
		return flow, fmt.Errorf("the sign-in took longer than %s: start again", ssoFlowTTL)
	}
	return flow, nil
}

func sign(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// cookieKey returns the shared signing key, creating it on first use.
func (s *Service) cookieKey(ctx context.Context) ([]byte, error) {
	v, err := s.store.SettingOrInit(ctx, cookieKeyName, randomSecret(32))
	if err != nil {
		return nil, err
	}
	return base64.RawURLEncoding.DecodeString(v)
}

// oauth2Reason keeps the provider's own words from a token endpoint error.
func oauth2Reason(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode != "" {
		if re.ErrorDescription != "" {
			return fmt.Errorf("%s: %s", re.ErrorCode, re.ErrorDescription)
		}
		return errors.New(re.ErrorCode)
	}
	return err
}
