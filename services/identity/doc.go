// Package identity says who is calling: local users with bcrypt passwords (the break-glass
// admin created at first start), single sign-on through an OpenID Connect provider with
// just-in-time provisioning, server-side sessions, and personal API tokens. Failed logins
// are limited per account and per address by counting them in the audit log, so every
// replica sees the same count. Every login, logout, refusal and token change is audited.
package identity
