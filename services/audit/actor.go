package audit

import (
	"context"

	"github.com/gantry-gpu/gantry/models"
)

// Actor is who causes the events appended under a context, and from where.
type Actor struct {
	Name      string // username, node name, job attempt, or "system"
	Type      string // models.ActorUser, ActorToken, ActorNode, ActorJob or ActorSystem
	IP        string
	RequestID string
}

// System is the actor of what Gantry does by itself.
func System() Actor { return Actor{Name: "system", Type: models.ActorSystem} }

type actorKey struct{}

// WithActor returns ctx carrying a; the web middleware sets it once per request.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the actor carried by ctx, or System when there is none.
func ActorFrom(ctx context.Context) Actor {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok {
		return a
	}
	return System()
}
