// Package jobs is job submission: the job spec of the API (the body of
// POST /api/v1/jobs), its validation field by field, and turning a valid spec
// into a queued job. Running and stopping jobs is services/dispatch's.
package jobs
