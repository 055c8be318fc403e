// Package slurm is the dispatch backend for pools whose jobs run on an existing Slurm
// cluster (provider "slurm"): Gantry keeps admission, quota, cost and audit, and Slurm
// places the job on its nodes.
//
// It drives the cluster through its commands (sbatch, squeue, sinfo, scontrol, sacct,
// scancel) behind the [Runner] interface. Every command's output is read by a pure
// parser (parse_*.go) that is table-tested on outputs recorded from a real Slurm and
// fuzzed; output it cannot read is a [*ParseError] naming the command, line and field.
//
//   - [Backend.Inventory]: partitions and nodes with their GPU GRES, read-only.
//   - [Backend.Submit]: a Gantry job attempt as a batch job (script.go): GRES, CPUs,
//     memory, time limit, QOS from the priority class, --signal=B:USR1@grace and
//     --requeue; idempotent, so a retry after a lost reply never submits twice.
//   - [Backend.Jobs] and [Backend.Runs]: state from squeue, and one accounting record
//     per run of a job from sacct (a preempted and requeued job has several).
//   - [Backend.Cancel], [Backend.Hold], [Backend.Release], [Backend.Checkpoint]:
//     scancel and scontrol, on Gantry's job only: another job under the Slurm id
//     (Slurm's ids restarted) is an [*OtherJobError]. A released job runs the attempt
//     Gantry names, which its script reads at start.
//   - [Follower]: polls with back-off and turns what it sees into [Event]s for the
//     jobs it tracks: started, pending with a reason, held, run ended (requeued or
//     final, with its record), vanished; and lists jobs submitted outside Gantry.
//   - [SpecOf] and [Decide] map between Gantry and Slurm: a job attempt to the batch
//     job it becomes, and each Event to the Gantry job's next states (gantry.go).
//
// Errors say whether to retry: [ErrUnavailable] (controller or database unreachable,
// a command timed out) and [*ParseError] are transient; a [*RejectedError] (bad
// partition, over a limit) is final and carries Slurm's reason.
package slurm
