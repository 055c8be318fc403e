package models

import (
	"strings"
	"time"
)

// Job states (DESIGN.md: "Rules that hold everywhere").
const (
	JobQueued     = "queued"
	JobScheduled  = "scheduled"
	JobRunning    = "running"
	JobSucceeded  = "succeeded"
	JobFailed     = "failed"
	JobCancelled  = "cancelled"
	JobHeld       = "held"
	JobPreempting = "preempting"
)

// JobStates lists every job state, in the order a job usually passes through them.
var JobStates = []string{JobQueued, JobHeld, JobScheduled, JobRunning, JobPreempting, JobSucceeded, JobFailed, JobCancelled}

// Job kinds steer placement when a job names no GPU model.
const (
	KindTraining  = "training"
	KindInference = "inference"
	KindBatch     = "batch"
)

// jobTransitions lists, for each state, the states a job may move to. A scheduled
// job may be held only while it waits in Slurm's queue (scontrol hold).
var jobTransitions = map[string][]string{
	JobQueued:     {JobScheduled, JobHeld, JobCancelled, JobFailed},
	JobHeld:       {JobQueued, JobCancelled},
	JobScheduled:  {JobRunning, JobQueued, JobPreempting, JobSucceeded, JobFailed, JobCancelled, JobHeld},
	JobRunning:    {JobSucceeded, JobFailed, JobCancelled, JobPreempting, JobQueued},
	JobPreempting: {JobQueued, JobHeld, JobSucceeded, JobFailed, JobCancelled}, // held: a person held it while it ran
}

// CanTransition reports whether a job may move from one state to another.
func CanTransition(from, to string) bool {
	for _, s := range jobTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// IsTerminal reports whether a job in this state will never run again.
func IsTerminal(state string) bool {
	return state == JobSucceeded || state == JobFailed || state == JobCancelled
}

// Job is a request to run a command on GPUs, and its current state.
type Job struct {
	ID               int64
	Name             string
	ProjectID        int64
	UserID           int64
	ImageID          *int64
	ImageRef         string
	Command          string // JSON array of strings
	Env              string // JSON object
	GPUs             int    `gorm:"column:gpus"`
	GPUMilli         int    // fraction of one GPU; 0 means whole GPUs
	GPUMemoryMiB     int64  `gorm:"column:gpu_memory_mib"`
	GPUModel         string // "A100|H100", or empty for any
	MIGProfile       string
	NVLink           bool `gorm:"column:nvlink"` // its whole GPUs joined by NVLink, each to every other
	CPUMilli         int64
	MemoryMiB        int64 `gorm:"column:memory_mib"`
	ScratchMiB       int64 `gorm:"column:scratch_mib"`
	Replicas         int
	Kind             string
	PriorityClass    string
	Preemptible      bool
	Spot             bool
	ExpectedRunSec   int64
	MaxRetries       int
	Retries          int // retries used: attempts that failed or lost their node and were requeued
	Attempt          int // the current attempt; also the fencing token of its allocations
	State            string
	StateReason      string
	PendingReason    string // the scheduler's last explanation while queued
	ExitCode         *int
	RerunOf          *int64 // the job this one re-ran; nil for one submitted afresh
	LastCheckpointAt *time.Time
	SubmittedAt      time.Time
	StartedAt        *time.Time
	FinishedAt       *time.Time
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// JobBrief is what the portal's jobs list shows of a job, with the names of its
// project and submitter: a list of them is a third of the memory of as many Jobs.
type JobBrief struct {
	ID        int64
	Name      string
	ProjectID int64
	// ProjectName and Username are the names of the job's project and submitter.
	ProjectName string
	Username    string
	ImageID     *int64
	ImageRef    string
	GPUs        int
	GPUMilli    int
	GPUModel    string
	MIGProfile  string
	State       string
	StateReason string
	SubmittedAt time.Time
}

// Allocation states.
const (
	AllocPending  = "pending"
	AllocRunning  = "running"
	AllocStopping = "stopping"
	AllocEnded    = "ended"
)

// Allocation binds one replica of one attempt of a job to a node and devices.
type Allocation struct {
	ID         int64
	JobID      int64
	Attempt    int
	Replica    int
	NodeID     int64
	Devices    string // JSON array of {uuid, milli, mig_profile}
	GPUMilli   int64
	CPUMilli   int64
	MemoryMiB  int64 `gorm:"column:memory_mib"`
	ScratchMiB int64 `gorm:"column:scratch_mib"`
	State      string
	StopReason string
	ExitCode   *int
	// JobTokenHash is the SHA-256 of the token the job reports metrics with; empty
	// until the lease is first issued.
	JobTokenHash string
	// CheckpointSavedAt is when the job, asked to stop, said it saved its checkpoint.
	CheckpointSavedAt *time.Time
	StartedAt         *time.Time
	EndedAt           *time.Time
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// JobEvent records one state change of a job with a reason a person can read.
type JobEvent struct {
	ID        int64
	JobID     int64
	Attempt   int
	FromState string
	ToState   string
	Reason    string
	Message   string
	Actor     string
	CreatedAt time.Time
}

// JobLogChunk is a piece of a job's output at a byte offset of one stream.
type JobLogChunk struct {
	ID        int64
	JobID     int64
	Attempt   int
	Replica   int
	Stream    string // stdout | stderr
	Offset    int64
	Data      []byte
	CreatedAt time.Time
}

// JobLogTail is the end of one log stream that could begin a secret value of the job:
// masked in its chunks, kept here in clear until the next chunk says whether the value
// follows. Only dispatch reads it.
type JobLogTail struct {
	JobID   int64  `gorm:"primaryKey;autoIncrement:false"`
	Attempt int    `gorm:"primaryKey;autoIncrement:false"`
	Replica int    `gorm:"primaryKey;autoIncrement:false"`
	Stream  string `gorm:"primaryKey"`
	Offset  int64
	Data    []byte
}

// UnmaskedJobLog is a job whose stored output may hold its secret values in clear: it
// was submitted before its output was masked (migration 0026). Only dispatch reads it.
type UnmaskedJobLog struct {
	JobID int64 `gorm:"primaryKey;autoIncrement:false"`
	// SweptAt is when its output was masked while an attempt of it still ran.
	SweptAt *time.Time
}

// TableName is the migration's name.
func (UnmaskedJobLog) TableName() string { return "job_logs_unmasked" }

// JobSecretEnv is the value of a job's secret environment variable, kept apart from the
// job so that nothing that shows a job can show it: only the job's leases (and its
// Slurm batch script) carry it.
type JobSecretEnv struct {
	JobID int64  `gorm:"primaryKey;autoIncrement:false"`
	Name  string `gorm:"primaryKey"`
	Value string
}

// TableName is the migration's name.
func (JobSecretEnv) TableName() string { return "job_secret_env" }

// SecretEnvName says whether a variable's name says its value is a secret, as
// HF_TOKEN, AWS_SECRET_ACCESS_KEY, WANDB_API_KEY or DB_PASSWORD do. It lives here,
// below both users: services/jobs keeps such values apart at submission
// (jobs.SecretName), and services/audit masks them in details written before it did.
func SecretEnvName(name string) bool {
	n := strings.ToUpper(name)
	return strings.HasSuffix(n, "_TOKEN") || strings.HasSuffix(n, "_KEY") || strings.HasSuffix(n, "_PASSWORD") || strings.Contains(n, "SECRET")
}

// MaskedSecret stands for a secret value wherever one would be shown: API answers, the
// audit log's page and export.
const MaskedSecret = "********"

// JobMetric is one scalar a job reported (step, loss, samples/s, custom).
type JobMetric struct {
	ID      int64
	JobID   int64
	Attempt int
	Step    int64
	Name    string
	Value   float64
	At      time.Time
}

// JobTemplate is a saved job spec of a project.
type JobTemplate struct {
	ID          int64
	ProjectID   int64
	Name        string
	Spec        string // JSON job spec
	CreatedByID int64
	CreatedAt   time.Time
}

// PriorityClass orders jobs and governs preemption.
type PriorityClass struct {
	ID                 int64
	Name               string
	Weight             int
	CanPreempt         bool
	Preemptible        bool
	CheckpointGraceSec int
	MaxRunTimeSec      int64
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// Quota is a team's share of GPUs of one model ("" for any), as QuotaLimits says.
type Quota struct {
	ID       int64
	TeamID   int64
	GPUModel string
	QuotaLimits
	CreatedAt time.Time
	UpdatedAt time.Time
}

// QuotaLimits are what a quota guarantees within its cohort, of GPUs and of the CPU and
// memory its jobs on those GPUs take, and how much it may borrow and lend. GPU figures
// are milli-GPUs, CPU milli-cores, memory MiB; a nil borrowing limit is unlimited, a nil
// lending limit lends all that is unused; a zero CPU or memory guarantee leaves that
// resource unlimited.
type QuotaLimits struct {
	Cohort                  string
	NominalMilli            int64
	BorrowingLimitMilli     *int64
	LendingLimitMilli       *int64
	CPUMilli                int64
	CPUBorrowingLimitMilli  *int64 `gorm:"column:cpu_borrowing_limit_milli"`
	CPULendingLimitMilli    *int64 `gorm:"column:cpu_lending_limit_milli"`
	MemoryMiB               int64  `gorm:"column:memory_mib"`
	MemoryBorrowingLimitMiB *int64 `gorm:"column:memory_borrowing_limit_mib"`
	MemoryLendingLimitMiB   *int64 `gorm:"column:memory_lending_limit_mib"`
}

// TableName keeps the plural that the migrations use.
func (Quota) TableName() string { return "quotas" }

// JobSubmitKey is the Idempotency-Key of a job submission and the job it queued: the
// same submission sent again with it gets that job.
type JobSubmitKey struct {
	UserID         int64  `gorm:"primaryKey;autoIncrement:false"`
	IdempotencyKey string `gorm:"primaryKey"`
	BodyHash       string // SHA-256 of the request's body, hex
	JobID          int64
	CreatedAt      time.Time
}
