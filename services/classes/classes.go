// Package classes keeps the priority classes: weight (a higher class runs first),
// whether the class may preempt and whether its jobs may be preempted, the checkpoint
// grace a stopped job gets, and the longest an attempt may run. The scheduler and
// dispatch read them at every pass; changes are audited.
package classes

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// Service reads and changes priority classes.
type Service struct {
	store *store.Store
	audit *audit.Log
}

// New returns the classes over st, auditing changes to log.
func New(st *store.Store, log *audit.Log) *Service { return &Service{store: st, audit: log} }

// Limits of what a class may say.
const (
	MaxWeight     = 1_000_000
	MaxGrace      = 24 * time.Hour
	MaxRunTimeCap = 365 * 24 * time.Hour
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// Input is a class as an admin describes it; MaxRunTime 0 means no limit.
type Input struct {
	Name        string
	Weight      int
	CanPreempt  bool
	Preemptible bool
	Grace       time.Duration
	MaxRunTime  time.Duration
}

func (in Input) validate() error {
	switch {
	case !nameRE.MatchString(in.Name):
		return models.Invalid("name", "%q is not a class name: use 1-63 lower-case letters, digits and '-'", in.Name)
	case in.Weight < 1 || in.Weight > MaxWeight:
		return models.Invalid("weight", "must be 1 to %d (a higher weight runs first)", MaxWeight)
	case in.Grace < 0 || in.Grace > MaxGrace || in.Grace%time.Second != 0:
		return models.Invalid("checkpoint_grace", "must be whole seconds from 0s to %s", MaxGrace)
	case in.MaxRunTime < 0 || in.MaxRunTime > MaxRunTimeCap || in.MaxRunTime%time.Second != 0:
		return models.Invalid("max_run_time", "must be whole seconds up to %s, or 0 for no limit", MaxRunTimeCap)
	case in.MaxRunTime > 0 && in.MaxRunTime < time.Minute:
		return models.Invalid("max_run_time", "%s is too short for any job: use 1m or more, or 0 for no limit", in.MaxRunTime)
	}
	return nil
}

// Create adds a class; a taken name is a FieldError on name.
func (s *Service) Create(ctx context.Context, in Input) (*models.PriorityClass, error) {
	return s.save(ctx, in, true)
}

// Update changes the class called in.Name. Jobs already submitted keep whether they may
// be preempted; everything else applies from the next scheduling pass.
func (s *Service) Update(ctx context.Context, in Input) (*models.PriorityClass, error) {
	return s.save(ctx, in, false)
}

func (s *Service) save(ctx context.Context, in Input, create bool) (*models.PriorityClass, error) {
	in.Name = strings.TrimSpace(in.Name)
	if err := in.validate(); err != nil {
		return nil, err
	}
	var c *models.PriorityClass
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		old, err := tx.PriorityClassByName(ctx, in.Name)
		switch {
		case err == nil && create:
			return models.Invalid("name", "a priority class called %q already exists: change it instead, or pick another name", in.Name)
		case errors.Is(err, store.ErrNotFound) && !create:
			return &NotFoundError{Name: in.Name}
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return err
		}
		c = &models.PriorityClass{Name: in.Name}
		var before any
		if old != nil {
			c, before = old, view(*old)
		}
		c.Weight, c.CanPreempt, c.Preemptible = in.Weight, in.CanPreempt, in.Preemptible
		c.CheckpointGraceSec, c.MaxRunTimeSec = int(in.Grace/time.Second), int64(in.MaxRunTime/time.Second)
		if err := tx.SavePriorityClass(ctx, c); err != nil {
			return err
		}
		action, detail := "priority_class.created", map[string]any{"class": view(*c)}
		if before != nil {
			action, detail["before"] = "priority_class.changed", before
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: action, ObjectType: "priority_class", ObjectID: in.Name, Detail: detail})
	})
	if err != nil {
		return nil, fmt.Errorf("save priority class %s: %w", in.Name, err)
	}
	return c, nil
}

// Delete removes a class no job that has not ended uses; the last class stays.
func (s *Service) Delete(ctx context.Context, name string) error {
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		c, err := tx.PriorityClassByName(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return &NotFoundError{Name: name}
		} else if err != nil {
			return err
		}
		all, err := tx.PriorityClasses(ctx)
		if err != nil {
			return err
		}
		if len(all) == 1 {
			return models.Invalid("name", "%s is the only priority class: jobs need one", name)
		}
		n, err := tx.CountJobsOfClass(ctx, name)
		if err != nil {
			return err
		}
		if n > 0 {
			return models.Invalid("name", "%d jobs of class %s have not ended: cancel them or wait before removing it", n, name)
		}
		if err := tx.DeletePriorityClass(ctx, name); err != nil {
			return err
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "priority_class.deleted", ObjectType: "priority_class", ObjectID: name,
			Detail: map[string]any{"before": view(*c)}})
	})
	if err != nil {
		return fmt.Errorf("delete priority class %s: %w", name, err)
	}
	return nil
}

// NotFoundError is a class name that does not exist.
type NotFoundError struct{ Name string }

func (e *NotFoundError) Error() string { return fmt.Sprintf("there is no priority class %q", e.Name) }

func view(c models.PriorityClass) map[string]any {
	return map[string]any{"weight": c.Weight, "can_preempt": c.CanPreempt, "preemptible": c.Preemptible,
		"checkpoint_grace_sec": c.CheckpointGraceSec, "max_run_time_sec": c.MaxRunTimeSec}
}
