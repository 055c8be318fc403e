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

// SlurmForeignJob is a job on a Slurm pool's partition that Gantry did not submit, as
// the last poll saw it: shown read-only, and counted in utilisation and in what the
// scheduler sees free.
type SlurmForeignJob struct {
	ID           int64
	PoolID       int64
	SlurmJobID   string
	Name         string
	User         string `gorm:"column:user_name"`
	Account      string
	QOS          string `gorm:"column:qos"`
	State        string // Slurm's: PENDING, RUNNING, ...
	Reason       string
	Nodes        string // JSON array of the Gantry nodes it runs on
	GPUs         int    `gorm:"column:gpus"` // per node
	GPUModel     string // Gantry's name of their model; "" when Slurm does not type them
	CPUs         int    `gorm:"column:cpus"`       // in all
	MemoryMiB    int64  `gorm:"column:memory_mib"` // per node
	SubmittedAt  time.Time
	StartedAt    *time.Time
	TimeLimitSec int64 // 0: none
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// SlurmClusterMove marks a Slurm pool that stands still because its slurm.conf
// reaches another cluster than the one its open jobs are on: the leader follows,
// stops and submits nothing there until the pool reaches theirs again, or an admin
// forgets those jobs. The leader writes it when it finds the pool so and deletes it
// once the pool reads its cluster without trouble.
type SlurmClusterMove struct {
	PoolID      int64  `gorm:"primaryKey;autoIncrement:false"`
	JobsCluster string // where the open jobs are
	ConfCluster string // where the slurm.conf leads now
	Reason      string // in words, as the pool's nodes say it
	FoundAt     time.Time
	// LastSeenAt is the last time the leader saw the jobs' cluster follow them (its
	// last poll there), FoundAt when it knows of none: a forgotten job is charged up
	// to then.
	LastSeenAt time.Time
}
