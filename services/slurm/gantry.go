package slurm

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/gpu"
)

// SpecOf is the JobSpec of one attempt of a Gantry job placed on a Slurm pool: its
// command and environment (stored as JSON), resources, and from its priority class the
// time limit and checkpoint grace. model is the GPU model the scheduler chose ("" for
// any); image is the container image, "" for the plain-command image.
func SpecOf(j models.Job, attempt int, class models.PriorityClass, model, image string) (JobSpec, error) {
	s := JobSpec{
		JobID: j.ID, Attempt: attempt, Name: j.Name, Image: image,
		GPUs: j.GPUs, GPUMilli: j.GPUMilli, GPUModel: model, MIGProfile: j.MIGProfile,
		CPUMilli: j.CPUMilli, MemoryMiB: j.MemoryMiB, Replicas: j.Replicas, PriorityClass: j.PriorityClass,
		TimeLimit:       time.Duration(class.MaxRunTimeSec) * time.Second,
		CheckpointGrace: time.Duration(class.CheckpointGraceSec) * time.Second,
	}
	if err := json.Unmarshal([]byte(j.Command), &s.Command); err != nil {
		return s, models.Invalid("command", "of job %d is not a JSON array of strings: %v", j.ID, err)
	}
	if j.Env != "" {
		if err := json.Unmarshal([]byte(j.Env), &s.Env); err != nil {
			return s, models.Invalid("env", "of job %d is not a JSON object of strings: %v", j.ID, err)
		}
	}
	return s, nil
}

// Step is one state change of a Gantry job, for store.TransitionJob.
type Step struct {
	To      string
	Reason  string // short and stable: started, succeeded, failed, cancelled, preempted, requeued, lost
	Message string // for people: names the Slurm job and run, and Slurm's reason
	// ExitCode is the job's exit code, on the step that ends it.
	ExitCode *int
	// NextAttempt: this step starts the job's next attempt (job.Attempt+1), bound
	// to the same Slurm job, which Slurm runs again by itself.
	NextAttempt bool
}

// Decision is what one Event means for the Gantry job it is about: dispatch applies
// it in one transaction. It never asks the scheduler to place a job that Slurm
// still holds, so a job never runs twice.
type Decision struct {
	// Steps move the job from its current state, in order; none: it stays.
	Steps []Step
	// Note says why a job that stays waits, or what could not be read: the job's
	// pending reason.
	Note string
	// Charge is a run that ended: its attempt's allocation gets StartedAt/EndedAt
	// from it, so the ledger charges what Slurm allocated (nil when it never started).
	Charge *Run
	// Resubmit: Slurm will not run the job again (preempted without requeue, or lost),
	// so it goes back to Gantry's queue for a new submission while retries remain.
	Resubmit bool
	// Cancel: Slurm runs a job that Gantry already ended; scancel it.
	Cancel bool
}

// Decide maps an event of a Slurm job to the Gantry job's next states, given the
// state the job is in now (models.Job*). A repeated event decides nothing new. An
// event the job's state cannot take (the job moved on in Gantry) is an error that
// says so; its Charge still stands.
func Decide(state string, e Event) (Decision, error) {
	var d Decision
	if models.IsTerminal(state) {
		// Gantry ended the job (a cancel) before Slurm did: charge what ran, stop the rest.
		d.Charge = charged(e)
		d.Cancel = e.Kind == EventStarted && !e.Over || e.Kind == EventPending || e.Kind == EventHeld
		return d, nil
	}
	switch e.Kind {
	case EventPending, EventHeld, EventUnreadable:
		d.Note = e.Message
	case EventStarted:
		if state == models.JobScheduled {
			d.Steps = []Step{{To: models.JobRunning, Reason: "started", Message: e.Message}}
		}
	case EventRunEnded:
		if e.Record == nil {
			return d, fmt.Errorf("event %s of Slurm job %s carries no accounting record", e.Kind, e.SlurmID)
		}
		d.Charge = charged(e)
		switch {
		case !e.Final:
			d.Steps = requeueSteps(state, e)
		case e.Record.State == "PREEMPTED":
			msg := e.Message + "; Slurm will not requeue it, Gantry will submit it again"
			d.Steps, d.Resubmit = backToQueue(state, "preempted", msg, true), true
		default:
			d.Steps = []Step{endStep(e)}
		}
	case EventVanished:
		if state == models.JobHeld {
			// Held in Gantry: it stays so, and is submitted anew once released.
			d.Note, d.Resubmit = e.Message+"; the job stays held, and is submitted again once released", true
			break
		}
		d.Steps, d.Resubmit = backToQueue(state, "lost", e.Message+"; Gantry will submit it again", false), true
	default:
		return d, fmt.Errorf("unknown event kind %q of Slurm job %s", e.Kind, e.SlurmID)
	}
	from := state
	for _, s := range d.Steps {
		if !models.CanTransition(from, s.To) {
			return d, fmt.Errorf("slurm job %s: %s: a Gantry job %s cannot move to %s", e.SlurmID, e.Message, from, s.To)
		}
		from = s.To
	}
	return d, nil
}

// requeueSteps: Slurm preempted (or lost the node of) a run and will run the job
// again. The job passes through preempting and queued to scheduled, with its next
// attempt, in one transaction: the scheduler never sees it queued.
func requeueSteps(state string, e Event) []Step {
	why := "preempted"
	if e.Record.State != "PREEMPTED" {
		why = "requeued"
	}
	chain := []Step{
		{To: models.JobPreempting, Reason: why, Message: e.Message},
		{To: models.JobQueued, Reason: "requeued", Message: fmt.Sprintf("Slurm requeued job %s", e.SlurmID)},
		{To: models.JobScheduled, Reason: "requeued", NextAttempt: true, Message: fmt.Sprintf("run %d waits in Slurm as job %s", e.Run+1, e.SlurmID)},
	}
	switch state {
	case models.JobPreempting:
		return chain[1:]
	case models.JobQueued:
		return chain[2:]
	}
	return chain
}

// backToQueue returns the job to Gantry's queue, through preempting when it was
// preempted while placed.
func backToQueue(state, reason, message string, viaPreempting bool) []Step {
	switch {
	case state == models.JobQueued:
		return nil
	case viaPreempting && (state == models.JobRunning || state == models.JobScheduled):
		return []Step{{To: models.JobPreempting, Reason: reason, Message: message}, {To: models.JobQueued, Reason: reason, Message: message}}
	}
	return []Step{{To: models.JobQueued, Reason: reason, Message: message}}
}

// endStep is the last state of a job whose Slurm job ended for good.
func endStep(e Event) Step {
	r := e.Record
	code := r.ExitCode
	if r.Signal != 0 && code == 0 {
		code = 128 + r.Signal // as a shell reports a job killed by a signal
	}
	s := Step{Message: e.Message, ExitCode: &code}
	switch r.State {
	case "COMPLETED":
		s.To, s.Reason = models.JobSucceeded, "succeeded"
	case "CANCELLED":
		s.To, s.Reason, s.Message = models.JobCancelled, "cancelled", e.Message+" (cancelled in Slurm)"
	default: // FAILED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, BOOT_FAIL, DEADLINE, ...
		s.To, s.Reason = models.JobFailed, strings.ToLower(strings.ReplaceAll(r.State, "_", "-"))
	}
	return s
}

func charged(e Event) *Run {
	if e.Kind != EventRunEnded || e.Record == nil || !e.Record.Ran() {
		return nil
	}
	return e.Record
}

// NodeName is the Gantry name of a Slurm node of a pool: the pool's name, a dot,
// and the node's, so that partitions sharing a node still give distinct Gantry nodes.
func NodeName(pool, node string) string { return pool + "." + node }

// GantryNode is a Slurm node as Gantry shows it: read-only (runtime slurm, no
// credential), labelled with its partition, name and cluster (so that the Gantry
// nodes of one Slurm node in several pools count once, whatever slurm.conf path each
// pool reaches its cluster by), its state and reason from Slurm's, and one device per
// GPU of its GRES, named by the pool's gres_types (a100 shows as A100-80GB).
func GantryNode(pool string, cfg Config, n Node) (models.Node, []models.GPUDevice) {
	state, reason := nodeState(n.State, n.Reason)
	labels, _ := json.Marshal(map[string]string{models.LabelSlurmPartition: cfg.Partition, models.LabelSlurmNode: n.Name, models.LabelSlurmCluster: n.Cluster})
	node := models.Node{
		Name: NodeName(pool, n.Name), State: state, StateReason: reason, Labels: string(labels),
		CPUMilli: int64(n.CPUs) * 1000, MemoryMiB: n.MemoryMiB, Runtime: models.RuntimeSlurm,
	}
	var devs []models.GPUDevice
	for _, g := range n.GPUs {
		model := cfg.ModelOf(g.Type)
		mem, _ := gpu.ModelMemoryMiB(model)
		for range g.Count {
			i := len(devs)
			devs = append(devs, models.GPUDevice{
				Index: i, UUID: fmt.Sprintf("slurm:%s:%s:%d", pool, n.Name, i), Model: model, MemoryMiB: mem, Healthy: true,
			})
		}
	}
	if cfg.NVLink {
		linkAll(devs)
	}
	return node, devs
}

// linkAll joins each GPU by NVLink to every other of its model on the node.
func linkAll(devs []models.GPUDevice) {
	for i := range devs {
		var peers []int
		for j := range devs {
			if j != i && devs[j].Model == devs[i].Model {
				peers = append(peers, devs[j].Index)
			}
		}
		if peers != nil {
			b, _ := json.Marshal(peers)
			devs[i].NVLinkPeers = string(b)
		}
	}
}

// nodeState maps sinfo's long state (idle, mixed, drained, down*, idle~, ...) to a
// Gantry node state: Slurm owns the node's health, Gantry only shows it.
func nodeState(state, reason string) (string, string) {
	base := strings.TrimRight(strings.ToLower(state), "*~#!%$@^-+")
	notResponding := strings.HasSuffix(state, "*")
	why := "Slurm: " + state
	if reason != "" {
		why += " (" + reason + ")"
	}
	switch {
	case notResponding:
		return models.NodeDown, why + ": slurmd is not responding"
	case base == "idle" || base == "mixed" || base == "allocated" || base == "completing" || base == "planned":
		return models.NodeReady, "Slurm: " + base
	case base == "drained" || base == "draining" || base == "drain" || base == "reserved" || base == "maint":
		return models.NodeCordoned, why
	}
	return models.NodeDown, why
}
