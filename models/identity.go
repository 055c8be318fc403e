package models

import (
	"encoding/json"
	"fmt"
	"time"
)

// Roles. admin and auditor are global; the others hold within one project.
const (
	RoleAdmin    = "admin"
	RoleAuditor  = "auditor"
	RoleTeamLead = "team-lead"
	RoleMember   = "member"
	RoleViewer   = "viewer"
)

// ProjectRoles lists the roles a membership may carry, most powerful first.
var ProjectRoles = []string{RoleTeamLead, RoleMember, RoleViewer}

// User is a person: created by OIDC on first login, or the local break-glass admin.
type User struct {
	ID           int64
	Username     string
	Email        string
	DisplayName  string
	Issuer       string // OIDC issuer; empty for local users
	Subject      string // OIDC subject; empty for local users
	PasswordHash string `json:"-"`
	IsAdmin      bool
	IsAuditor    bool
	Disabled     bool
	LastLoginAt  *time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Team owns projects, quotas and budgets.
type Team struct {
	ID          int64
	Name        string
	DisplayName string
	Archived    bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Project is the unit of access control (the Casbin domain) and of cost roll-up.
type Project struct {
	ID                int64
	TeamID            int64
	Name              string
	DisplayName       string
	Archived          bool
	AllowCustomImages bool
	AllowedPools      string // JSON array of pool names; empty means any
	AllowedRegions    string // JSON array of regions; empty means any
	ConfidentialOnly  bool
	DefaultImageID    *int64
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// Membership gives a user a role in a project.
type Membership struct {
	ID        int64
	UserID    int64
	ProjectID int64
	Role      string
	CreatedAt time.Time
}

// GroupMapping maps an identity-provider group to a project role in one project
// (ProjectID), in every project of a team (TeamID), or to a global role (neither).
type GroupMapping struct {
	ID        int64
	Group     string `gorm:"column:group_name"`
	ProjectID *int64
	TeamID    *int64
	Role      string
	CreatedAt time.Time
}

// Session is a server-side login session; ID is the SHA-256 of the cookie value.
type Session struct {
	ID         string
	UserID     int64
	CSRFToken  string `json:"-"`
	IP         string
	UserAgent  string
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
}

// APIToken is a personal access token; only its SHA-256 is stored.
type APIToken struct {
	ID         int64
	UserID     int64
	Name       string
	Prefix     string // first characters, shown so a person can tell tokens apart
	Hash       string `json:"-"`
	Scope      string // read | write
	ExpiresAt  *time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	CreatedAt  time.Time
}

// Setting is one admin-editable key of the portal's configuration.
type Setting struct {
	Key       string `gorm:"primaryKey"`
	Value     string
	UpdatedAt time.Time
}

// PlacementLists reads the project's allowed pools and regions (JSON arrays; empty allows any).
func (p *Project) PlacementLists() (pools, regions []string, err error) {
	for _, f := range []struct {
		raw string
		to  *[]string
	}{{p.AllowedPools, &pools}, {p.AllowedRegions, &regions}} {
		if f.raw == "" {
			continue
		}
		if err := json.Unmarshal([]byte(f.raw), f.to); err != nil {
			return nil, nil, fmt.Errorf("placement policy of project %s: %w", p.Name, err)
		}
	}
	return pools, regions, nil
}
