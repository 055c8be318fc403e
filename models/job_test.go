package models

import "testing"

func TestJobTransitions(t *testing.T) {
	allowed := [][2]string{
		{JobQueued, JobScheduled}, {JobScheduled, JobRunning}, {JobRunning, JobSucceeded},
		{JobRunning, JobPreempting}, {JobPreempting, JobQueued}, {JobQueued, JobHeld}, {JobHeld, JobQueued},
		{JobRunning, JobQueued},  // node lost: requeued
		{JobPreempting, JobHeld}, // held while it ran: checkpointed, then held
		{JobScheduled, JobHeld},  // waiting in Slurm: held there
	}
	for _, p := range allowed {
		if !CanTransition(p[0], p[1]) {
			t.Errorf("%s -> %s must be allowed", p[0], p[1])
		}
	}
	refused := [][2]string{
		{JobSucceeded, JobRunning}, {JobFailed, JobQueued}, {JobCancelled, JobQueued},
		{JobQueued, JobRunning}, {JobHeld, JobRunning}, {JobQueued, JobQueued}, {JobRunning, JobHeld}, {JobHeld, JobScheduled},
	}
	for _, p := range refused {
		if CanTransition(p[0], p[1]) {
			t.Errorf("%s -> %s must be refused", p[0], p[1])
		}
	}
	for _, s := range []string{JobSucceeded, JobFailed, JobCancelled} {
		if !IsTerminal(s) {
			t.Errorf("%s is terminal", s)
		}
	}
	if IsTerminal(JobPreempting) {
		t.Error("preempting is not terminal")
	}
}

func TestFieldError(t *testing.T) {
	err := Invalid("resources.gpus", "must be between 0 and %d", 8)
	fe, ok := err.(*FieldError)
	if !ok || fe.Field != "resources.gpus" || err.Error() != "resources.gpus: must be between 0 and 8" {
		t.Fatalf("Invalid = %#v", err)
	}
}
