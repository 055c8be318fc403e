package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// SubmitKeyTTL is how long the idempotency key of a submission holds: a retry comes
// within seconds or minutes, and a day bounds what is kept.
const SubmitKeyTTL = 24 * time.Hour

// MaxSubmitKey is the longest idempotency key.
const MaxSubmitKey = 255

// SubmitKeyField names the idempotency key in errors: the API takes it as a header.
const SubmitKeyField = "Idempotency-Key"

// SubmitOnce is Submit for a request that carries an idempotency key (a client's
// token for one submission, such as a UUID) and the SHA-256 of its body, hex. The same
// key with the same body within SubmitKeyTTL gets the job the first request queued,
// and created is false: a client that lost the answer may send the request again
// without queuing the job twice. The same key with another body is refused naming the
// key. The key is stored in the transaction that stores the job.
func (s *Service) SubmitOnce(ctx context.Context, user *models.User, spec Spec, key, bodyHash string) (j *models.Job, created bool, err error) {
	if err := checkSubmitKey(key); err != nil {
		return nil, false, err
	}
	since := time.Now().Add(-SubmitKeyTTL)
	if j, err := s.replay(ctx, user, key, bodyHash, since); !errors.Is(err, store.ErrNotFound) {
		return j, false, err
	}
	// Keys past their day go as new ones come: the user's own expired one among them.
	if _, err := s.store.DeleteJobSubmitKeysBefore(ctx, since); err != nil {
		return nil, false, err
	}
	j, err = s.submit(ctx, user, spec, nil, func(tx *store.Store, j *models.Job) error {
		return tx.CreateJobSubmitKey(ctx, &models.JobSubmitKey{UserID: user.ID, IdempotencyKey: key, BodyHash: bodyHash, JobID: j.ID, CreatedAt: j.SubmittedAt})
	})
	if errors.Is(err, store.ErrConflict) {
		// The same request, sent twice at once: the other one queued the job.
		if first, err := s.replay(ctx, user, key, bodyHash, since); !errors.Is(err, store.ErrNotFound) {
			return first, false, err
		}
	}
	return j, err == nil, err
}

// replay returns the job that user's key queued since then, ErrNotFound when it
// queued none.
func (s *Service) replay(ctx context.Context, user *models.User, key, bodyHash string, since time.Time) (*models.Job, error) {
	k, err := s.store.JobSubmitKey(ctx, user.ID, key, since)
	if err != nil {
		return nil, err
	}
	if k.BodyHash != bodyHash {
		return nil, models.Invalid(SubmitKeyField, "was sent with another job at %s UTC (job %d): use a new key for each job, and the same one only to send the same request again",
			k.CreatedAt.UTC().Format(time.DateTime), k.JobID)
	}
	j, err := s.store.JobByID(ctx, k.JobID)
	if err != nil {
		return nil, fmt.Errorf("the job of submission key %q: %w", key, err)
	}
	return j, nil
}

// checkSubmitKey refuses a key that is empty, too long, or not printable ASCII.
func checkSubmitKey(key string) error {
	if key == "" || len(key) > MaxSubmitKey {
		return models.Invalid(SubmitKeyField, "must be 1 to %d characters, such as a UUID", MaxSubmitKey)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return models.Invalid(SubmitKeyField, "must be printable ASCII without spaces (character %d is not)", i+1)
		}
	}
	return nil
}
