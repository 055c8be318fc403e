package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
)

// UserKey is the gin context key under which the web gate puts the signed-in
// *models.User (through a session or an API token).
const UserKey = "gantry.user"

// currentUser returns the signed-in user, or answers 401 and returns nil.
func currentUser(c *gin.Context) *models.User {
	if u, ok := c.Get(UserKey); ok {
		if user, ok := u.(*models.User); ok && user != nil {
			return user
		}
	}
	jsonError(c, http.StatusUnauthorized, "unauthorized", "Sign in, or send an API token as Authorization: Bearer <token>.", "")
	return nil
}
