package telemetry

import (
	"fmt"
	"time"
)

// Config says how long each resolution is kept and how much lateness and clock skew
// ingest tolerates. Zero fields take the defaults of DefaultConfig.
type Config struct {
	// RawRetention is how long raw samples are kept (default 24 h).
	RawRetention time.Duration
	// MinuteRetention and HourRetention keep the roll-ups (default 90 days each).
	MinuteRetention time.Duration
	HourRetention   time.Duration
	// Grace is how long after a minute ends its roll-up waits for late heartbeats
	// (default 2 min). A raw sample arriving later stays raw and is never rolled up.
	Grace time.Duration
	// MaxClockSkew is how far ahead of the server clock a sample may be stamped
	// (default 2 min); further ahead, the node's clock is wrong and the sample is refused.
	MaxClockSkew time.Duration
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		RawRetention:    24 * time.Hour,
		MinuteRetention: 90 * 24 * time.Hour,
		HourRetention:   90 * 24 * time.Hour,
		Grace:           2 * time.Minute,
		MaxClockSkew:    2 * time.Minute,
	}
}

// Validate says whether New would take c.
func (c Config) Validate() error {
	_, err := c.withDefaults()
	return err
}

// withDefaults fills the zero fields and checks that the windows fit together.
func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	fill := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&c.RawRetention, d.RawRetention)
	fill(&c.MinuteRetention, d.MinuteRetention)
	fill(&c.HourRetention, d.HourRetention)
	fill(&c.Grace, d.Grace)
	fill(&c.MaxClockSkew, d.MaxClockSkew)
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"raw retention", c.RawRetention}, {"minute retention", c.MinuteRetention},
		{"hour retention", c.HourRetention}, {"grace", c.Grace}, {"max clock skew", c.MaxClockSkew},
	} {
		if f.v < 0 {
			return c, fmt.Errorf("telemetry %s is %s: it must be positive", f.name, f.v)
		}
	}
	// Raw samples must outlive the minute they are rolled into, and 1-minute rows the
	// hour. Prune never deletes what is not rolled up yet, so a shorter window would
	// silently keep more than configured: refuse it instead.
	if c.RawRetention < c.Grace+2*time.Minute {
		return c, fmt.Errorf("telemetry raw retention %s is too short: keep raw samples at least grace + 2 min (%s)", c.RawRetention, c.Grace+2*time.Minute)
	}
	if c.MinuteRetention < c.Grace+2*time.Hour {
		return c, fmt.Errorf("telemetry minute retention %s is too short: keep 1-minute roll-ups at least grace + 2 h (%s)", c.MinuteRetention, c.Grace+2*time.Hour)
	}
	return c, nil
}
