package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// SetJobPriorityClass moves job id from class from to class to, recording an event with
// reason; ErrStale when the job's class is no longer from.
func (s *Store) SetJobPriorityClass(ctx context.Context, id int64, from, to, reason, message, actor string) error {
	err := s.InTx(ctx, func(tx *Store) error {
		res := tx.with(ctx).Model(&models.Job{}).Where("id = ? AND priority_class = ?", id, from).
			Updates(map[string]any{"priority_class": to, "updated_at": time.Now().UTC()})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			if _, err := tx.JobByID(ctx, id); err != nil {
				return err
			}
			return fmt.Errorf("%w: its priority class is no longer %s", ErrStale, from)
		}
		j, err := tx.JobByID(ctx, id)
		if err != nil {
			return err
		}
		return tx.with(ctx).Create(&models.JobEvent{JobID: id, Attempt: j.Attempt, FromState: j.State, ToState: j.State,
			Reason: reason, Message: message, Actor: actor}).Error
	})
	if err != nil {
		return fmt.Errorf("move job %d from class %s to %s: %w", id, from, to, err)
	}
	return nil
}
