package telemetry

import "github.com/gantry-gpu/gantry/services/store"

// Service ingests, rolls up, prunes and reads telemetry. It is safe for concurrent
// use, but Rollup and Prune must run on one replica at a time (the leader).
type Service struct {
	store *store.Store
	cfg   Config
}

// New returns a Service over st; zero fields of cfg take their defaults.
func New(st *store.Store, cfg Config) (*Service, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Service{store: st, cfg: c}, nil
}

// Config returns the configuration in effect, defaults filled in.
func (s *Service) Config() Config { return s.cfg }
