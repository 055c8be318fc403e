package identity

import (
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
)

// Principal is who a request comes from: a user, through a browser session or an API token.
type Principal struct {
	User    *models.User
	Session *models.Session  // set for a browser session
	Token   *models.APIToken // set for an API token
	// PolicyVersion is the authorization policy version read with the credential: the
	// request's permissions are asked at it (authz.WithVersion).
	PolicyVersion string
}

// ReadOnly reports whether the principal may only read: a read-scoped token.
func (p *Principal) ReadOnly() bool { return p.Token != nil && p.Token.Scope == ScopeRead }

// Actor is the principal as the audit log names it.
func (p *Principal) Actor(ip, requestID string) audit.Actor {
	kind := models.ActorUser
	if p.Token != nil {
		kind = models.ActorToken
	}
	return audit.Actor{Name: p.User.Username, Type: kind, IP: ip, RequestID: requestID}
}
