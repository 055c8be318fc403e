package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
)

// UserKey is the gin context key under which the authentication middleware puts
// the signed-in *models.User (a session or an API token).
const UserKey = "gantry.user"

// currentUser returns the signed-in user, or answers 401 and returns nil. Unless
// the middleware named an audit actor already, the user becomes the actor of what
// the request changes.
func currentUser(c *gin.Context) *models.User {
	if u, ok := c.Get(UserKey); ok {
		if user, ok := u.(*models.User); ok && user != nil {
			ctx := c.Request.Context()
			if audit.ActorFrom(ctx).Type == models.ActorSystem {
				c.Request = c.Request.WithContext(audit.WithActor(ctx, audit.Actor{
					Name: user.Username, Type: models.ActorUser, IP: c.ClientIP(), RequestID: c.GetString(RequestIDKey),
				}))
			}
			return user
		}
	}
	jsonError(c, http.StatusUnauthorized, "unauthorized", "sign in, or send an API token as Authorization: Bearer <token>", "")
	return nil
}
