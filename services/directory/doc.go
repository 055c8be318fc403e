// Package directory is the admin console's people and access: teams and projects
// (create, archive), people (disable and enable, with their sessions ended and, when the
// admin chooses, their jobs stopped) and identity-provider group mappings. Every change
// is audited in its own transaction; role grants go through services/authz.
package directory
