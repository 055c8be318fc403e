package pools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// Provider creates, deletes and lists the machines of one pool. A created machine
// boots `gantry agent` with the join token it was given and joins under its name.
type Provider interface {
	Create(ctx context.Context, req CreateRequest) ([]Instance, error)
	Delete(ctx context.Context, pool PoolInfo, nodes []Instance) error
	List(ctx context.Context, pool PoolInfo) ([]Instance, error)
}

// PoolInfo is what a provider is told of the pool it works for.
type PoolInfo struct {
	Name         string            `json:"name"`
	Region       string            `json:"region,omitempty"`
	Zone         string            `json:"zone,omitempty"`
	CapacityType string            `json:"capacity_type"`
	Template     Template          `json:"template"`
	Labels       map[string]string `json:"labels"`
}

// InfoOf is the pool as its provider sees it.
func InfoOf(p models.NodePool, t Template) PoolInfo {
	return PoolInfo{Name: p.Name, Region: p.Region, Zone: p.Zone, CapacityType: p.CapacityType, Template: t, Labels: NodeLabels(p, t)}
}

// NewNode is one machine to create: the node name its agent joins as, and the
// one-use join token it joins with.
type NewNode struct {
	Name      string `json:"name"`
	JoinToken string `json:"join_token"`
}

// CreateRequest asks for machines; Server is the URL their agents reach Gantry at.
type CreateRequest struct {
	Pool   PoolInfo  `json:"pool"`
	Server string    `json:"server"`
	Nodes  []NewNode `json:"nodes"`
}

// Instance is one machine as the provider reports it.
type Instance struct {
	Name       string `json:"name"`
	ProviderID string `json:"provider_id,omitempty"`
	State      string `json:"state,omitempty"`
	// Interruption is set when the provider announced it will reclaim the machine.
	Interruption *Interruption `json:"interruption,omitempty"`
}

// Interruption is a reclaim notice: the machine goes away at Deadline.
type Interruption struct {
	Deadline time.Time `json:"deadline"`
	Reason   string    `json:"reason,omitempty"`
}

// ErrStatic: a static pool's nodes join by hand; there is nothing to create or delete.
var ErrStatic = errors.New("a static pool's nodes join by hand: nothing to create or delete")

// staticProvider is the provider of static pools.
type staticProvider struct{}

func (staticProvider) Create(context.Context, CreateRequest) ([]Instance, error) {
	return nil, ErrStatic
}
func (staticProvider) Delete(context.Context, PoolInfo, []Instance) error { return ErrStatic }
func (staticProvider) List(context.Context, PoolInfo) ([]Instance, error) { return nil, ErrStatic }

// ProviderOf builds the provider a pool names.
func ProviderOf(p models.NodePool) (Provider, error) {
	switch p.Provider {
	case ProviderStatic:
		return staticProvider{}, nil
	case ProviderExec:
		cfg, err := ParseExecConfig(p.ProviderConfig)
		if err != nil {
			return nil, fmt.Errorf("pool %s: %w", p.Name, err)
		}
		return NewExec(cfg), nil
	}
	return nil, fmt.Errorf("pool %s: provider %s places jobs itself; Gantry does not create its nodes", p.Name, p.Provider)
}
