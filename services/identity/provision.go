package identity

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// ssoClaims is what Gantry takes from the provider about a user.
type ssoClaims struct {
	Subject  string
	Username string
	Email    string
	Name     string
	Groups   []string
}

// claims reads the user from the ID token, completed from the userinfo endpoint when the
// token lacks the name, e-mail or groups (providers differ in what they put where).
func (o *OIDC) claims(ctx context.Context, p *oidc.Provider, idt *oidc.IDToken, tok *oauth2.Token) (ssoClaims, error) {
	all := map[string]any{}
	if err := idt.Claims(&all); err != nil {
		return ssoClaims{}, fmt.Errorf("read the ID token's claims: %w", err)
	}
	_, hasName := all[o.cfg.UsernameClaim]
	_, hasEmail := all["email"]
	_, hasGroups := all[o.cfg.GroupsClaim]
	if (!hasName || !hasEmail || !hasGroups) && p.UserInfoEndpoint() != "" {
		info, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			return ssoClaims{}, fmt.Errorf("read the user's profile from the provider: %w", err)
		}
		if info.Subject != idt.Subject {
			return ssoClaims{}, errors.New("the provider's profile is of another user than the ID token")
		}
		extra := map[string]any{}
		if err := info.Claims(&extra); err != nil {
			return ssoClaims{}, fmt.Errorf("read the user's profile: %w", err)
		}
		for k, v := range extra {
			if _, ok := all[k]; !ok {
				all[k] = v
			}
		}
	}
	c := ssoClaims{Subject: idt.Subject, Email: str(all["email"]), Name: str(all["name"]), Groups: strs(all[o.cfg.GroupsClaim])}
	c.Username = str(all[o.cfg.UsernameClaim])
	if c.Username == "" {
		c.Username = c.Email
	}
	if c.Username == "" {
		c.Username = c.Subject
	}
	return c, nil
}

func str(v any) string {
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

// strs reads a claim that is a list of strings, or one string.
func strs(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// provision finds or creates (just in time) the user of a provider identity, refuses a
// disabled one, applies the group mappings and records the login.
func (s *Service) provision(ctx context.Context, issuer string, c ssoClaims) (*models.User, error) {
	a := audit.ActorFrom(ctx)
	a.Name, a.Type = c.Username, models.ActorUser
	ctx = audit.WithActor(ctx, a)
	u, err := s.store.UserByIdentity(ctx, issuer, c.Subject)
	switch {
	case errors.Is(err, store.ErrNotFound):
		u = nil
	case err != nil:
		return nil, err
	case u.Disabled:
		return nil, s.refuse(audit.WithActor(ctx, audit.Actor{Name: u.Username, Type: models.ActorUser, IP: a.IP, RequestID: a.RequestID}),
			ActionLoginRefused, "account disabled", ErrDisabled)
	}
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		if u == nil {
			created, err := s.createSSOUser(ctx, tx, issuer, c)
			if err != nil {
				return err
			}
			u = created
		} else if u.Email != c.Email || (c.Name != "" && u.DisplayName != c.Name) {
			u.Email = c.Email
			if c.Name != "" {
				u.DisplayName = c.Name
			}
			if err := tx.UpdateUser(ctx, u); err != nil {
				return err
			}
		}
		ctx := audit.WithActor(ctx, audit.Actor{Name: u.Username, Type: models.ActorUser, IP: a.IP, RequestID: a.RequestID})
		if err := s.applyGroups(ctx, tx, u, c.Groups); err != nil {
			return err
		}
		return s.loggedIn(ctx, tx, u, map[string]any{"method": "oidc", "issuer": issuer, "groups": c.Groups})
	})
	if err != nil {
		return nil, fmt.Errorf("sign in %s from %s: %w", c.Username, issuer, err)
	}
	return u, nil
}

// usernameChars is what a provisioned username keeps of the provider's name.
var usernameChars = regexp.MustCompile(`[^a-zA-Z0-9._@-]+`)

// createSSOUser creates the user of a first sign-in, under the provider's username, or
// that name with a number when a different person has it already.
func (s *Service) createSSOUser(ctx context.Context, tx *store.Store, issuer string, c ssoClaims) (*models.User, error) {
	base := strings.Trim(usernameChars.ReplaceAllString(c.Username, "-"), "-")
	if len(base) > 56 {
		base = base[:56]
	}
	if base == "" {
		base = "user"
	}
	name := base
	for i := 2; ; i++ {
		_, err := tx.UserByUsername(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return nil, err
		}
		if i > 100 {
			return nil, fmt.Errorf("no free username near %q", base)
		}
		name = fmt.Sprintf("%s-%d", base, i)
	}
	u := &models.User{Username: name, Email: c.Email, DisplayName: c.Name, Issuer: issuer, Subject: c.Subject}
	if err := tx.CreateUser(ctx, u); err != nil {
		return nil, err
	}
	return u, s.audit.In(tx).Append(ctx, audit.Entry{Action: "user.created", ObjectType: "user", ObjectID: u.Username,
		Detail: map[string]string{"source": "oidc", "issuer": issuer, "subject": c.Subject, "email": c.Email}})
}

// applyGroups grants the roles that the user's provider groups map to. It only adds or
// raises roles: what an admin granted by hand is never lowered by a sign-in.
func (s *Service) applyGroups(ctx context.Context, tx *store.Store, u *models.User, groups []string) error {
	mappings, err := tx.GroupMappingsFor(ctx, groups)
	if err != nil || len(mappings) == 0 {
		return err
	}
	az := s.authz.In(tx)
	admin, auditor := u.IsAdmin, u.IsAuditor
	best := map[int64]string{}
	raise := func(projectID int64, role string) {
		if r, ok := best[projectID]; !ok || stronger(role, r) {
			best[projectID] = role
		}
	}
	for _, m := range mappings {
		switch {
		case m.ProjectID == nil && m.TeamID == nil && m.Role == models.RoleAdmin:
			admin = true
		case m.ProjectID == nil && m.TeamID == nil && m.Role == models.RoleAuditor:
			auditor = true
		case !slices.Contains(models.ProjectRoles, m.Role):
		case m.ProjectID != nil:
			raise(*m.ProjectID, m.Role)
		case m.TeamID != nil:
			// A team mapping reaches the team's projects as they are at this sign-in.
			projects, err := tx.ProjectsOfTeam(ctx, *m.TeamID)
			if err != nil {
				return err
			}
			for _, p := range projects {
				if !p.Archived {
					raise(p.ID, m.Role)
				}
			}
		}
	}
	if err := az.SetGlobalRoles(ctx, u, admin, auditor); err != nil {
		return err
	}
	for projectID, role := range best {
		current, err := tx.MembershipOf(ctx, u.ID, projectID)
		if err == nil && !stronger(role, current.Role) {
			continue
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		p, err := tx.ProjectByID(ctx, projectID)
		if err != nil {
			return err
		}
		if err := az.SetProjectRole(ctx, u, p, role); err != nil {
			return err
		}
	}
	return nil
}

// stronger reports whether project role a outranks b (models.ProjectRoles is strongest first).
func stronger(a, b string) bool {
	return slices.Index(models.ProjectRoles, a) < slices.Index(models.ProjectRoles, b)
}
