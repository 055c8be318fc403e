// Package store is the only package that talks to the database (gorm). It opens SQLite
// or PostgreSQL, runs the migrations, and offers getters named noun-first (JobByID, Jobs)
// and mutators named verb-first (CreateJob). Errors are wrapped sentinels: ErrNotFound,
// ErrConflict, ErrStale. Its conformance suite runs on both databases.
package store
