package models

import "time"

// SlurmJob is a Slurm batch job that Gantry submitted for an attempt of a job on a
// pool with provider slurm, and what Gantry last saw of it. It outlives server
// restarts, so a job is followed, stopped and charged exactly once.
type SlurmJob struct {
	ID     int64
	PoolID int64
	JobID  int64
	// Attempt submitted it: its Slurm job name is gantry-JOB-ATTEMPT.
	Attempt int
	// CurrentAttempt is the Gantry attempt it runs now: a run that Slurm requeued
	// (a QOS preemption) comes back as the job's next attempt, still this Slurm job.
	CurrentAttempt int
	SlurmJobID     string
	Seen           string // the follower's last view of it (JSON of slurm.Seen)
	// StopReason says why Gantry stops it (cancel, preempt, drain, governance, ...);
	// empty while Gantry wants it to run.
	StopReason  string
	SignalledAt *time.Time // when it was asked to checkpoint (USR1), or cancelled
	// StdoutBase and StderrBase are where the current attempt's output starts in the
	// job's log files, which every run appends to.
	StdoutBase int64
	StderrBase int64
	Done       bool // Slurm ended it for good and Gantry applied that
	LogsDone   bool // all of its output is in Gantry's log store
	CreatedAt  time.Time
	UpdatedAt  time.Time
}
