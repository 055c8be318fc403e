package accounting

import (
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// Config tunes metering.
type Config struct {
	// Interval is the metering grain: the fleet is closed, and running allocations are
	// charged, in whole intervals aligned to UTC. It divides a day. Default one hour.
	Interval time.Duration
	// LateGrace is how long after the last metered interval an allocation may still be
	// reported as ended and be charged. Default seven days.
	LateGrace time.Duration
}

// Accounting prices usage into the ledger and reads it back.
type Accounting struct {
	store *store.Store
	audit *audit.Log
	cfg   Config
}

// New returns an Accounting over st that audits rate and budget changes in al; zero
// fields of cfg take their defaults.
func New(st *store.Store, al *audit.Log, cfg Config) (*Accounting, error) {
	if st == nil || al == nil {
		return nil, fmt.Errorf("accounting needs a store and an audit log")
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Hour
	}
	if cfg.LateGrace == 0 {
		cfg.LateGrace = 7 * 24 * time.Hour
	}
	day := 24 * time.Hour
	if cfg.Interval < time.Minute || cfg.Interval > day || day%cfg.Interval != 0 || cfg.Interval%time.Second != 0 {
		return nil, fmt.Errorf("metering interval %s: want whole seconds from 1m to 24h that divide a day (e.g. 15m, 1h)", cfg.Interval)
	}
	if cfg.LateGrace < 0 {
		return nil, fmt.Errorf("late grace %s: want 0 or more", cfg.LateGrace)
	}
	return &Accounting{store: st, audit: al, cfg: cfg}, nil
}

// Interval returns the metering grain.
func (a *Accounting) Interval() time.Duration { return a.cfg.Interval }
