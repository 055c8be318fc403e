package store

import (
	"context"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/migrations"
)

// leaderLock is the PostgreSQL advisory lock key held by the replica that runs
// dispatch and the other loops that must run once.
const leaderLock = 7_426_800_010

// leaderPoll is how often a replica that is not the leader tries again, and how
// often the leader checks that it still holds the lock.
const leaderPoll = 2 * time.Second

// Lead blocks until this replica holds the leader lock, then returns a context
// that ends when it loses it (its database connection broke) or when ctx ends,
// and a function that gives the lock up. On SQLite, one server owns the database:
// it leads at once.
func (s *Store) Lead(ctx context.Context) (context.Context, func(), error) {
	if s.dialect != migrations.Postgres {
		lctx, cancel := context.WithCancel(ctx)
		return lctx, cancel, nil
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, nil, err
	}
	for {
		conn, err := sqlDB.Conn(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("leader lock: %w", err)
		}
		var got bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", leaderLock).Scan(&got); err != nil {
			conn.Close()
			return nil, nil, fmt.Errorf("leader lock: %w", err)
		}
		if got {
			lctx, cancel := context.WithCancel(ctx)
			go func() {
				// The lock lives as long as this session: watch it.
				t := time.NewTicker(leaderPoll)
				defer t.Stop()
				for {
					select {
					case <-lctx.Done():
						unlock, done := context.WithTimeout(context.Background(), 5*time.Second)
						conn.ExecContext(unlock, "SELECT pg_advisory_unlock($1)", leaderLock)
						done()
						conn.Close()
						return
					case <-t.C:
						if err := conn.PingContext(lctx); err != nil && lctx.Err() == nil {
							cancel()
						}
					}
				}
			}()
			return lctx, cancel, nil
		}
		conn.Close()
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(leaderPoll):
		}
	}
}
