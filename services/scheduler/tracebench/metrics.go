package tracebench

import (
	"math"
	"slices"
)

// event is the metrics sample taken after every arrival (PROTOCOL.md §9).
type event struct {
	arrived int64
	used    int64
	fragSum float64
}

// runMetrics are one seed's figures for one policy.
type runMetrics struct {
	alloc100, alloc130 float64
	fragRate90         float64
	firstFailPct       float64
	ceiling            float64
	decisions          int
	decisionNanos      int64
	p99Nanos           int64
	cpuNanos           int64
	p99CPUNanos        int64
}

// binned computes the §9 figures from the event log of one run.
func binned(events []event, gpus int64, capacityMilli int64) (alloc func(x int) float64, fragRate func(x int) float64) {
	byBin := map[int][]event{}
	for _, e := range events {
		pct := math.RoundToEven(float64(e.arrived) / float64(gpus*10))
		byBin[int(pct)] = append(byBin[int(pct)], e)
	}
	// §9 falls back to the bins x±1; a sparse trace may need to look further, to the
	// nearest bins that hold events.
	at := func(x int) []event {
		if es := byBin[x]; len(es) > 0 {
			return es
		}
		for d := 1; d <= 200; d++ {
			var es []event
			for b := x - d; b <= x+d; b++ {
				es = append(es, byBin[b]...)
			}
			if len(es) > 0 {
				return es
			}
		}
		return nil
	}
	alloc = func(x int) float64 {
		es := at(x)
		if len(es) == 0 {
			return math.NaN()
		}
		var s float64
		for _, e := range es {
			s += round2(float64(e.used) / float64(gpus*10))
		}
		return round2(s / float64(len(es)))
	}
	fragRate = func(x int) float64 {
		es := at(x)
		if len(es) == 0 {
			return math.NaN()
		}
		var s float64
		for _, e := range es {
			idle := capacityMilli - e.used
			if idle > 0 {
				s += 100 * e.fragSum / float64(idle)
			}
		}
		return s / float64(len(es))
	}
	return alloc, fragRate
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// percentile99 returns the 99th percentile of the durations (nearest rank).
func percentile99(ns []int64) int64 {
	if len(ns) == 0 {
		return 0
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	i := int(math.Ceil(0.99*float64(len(s)))) - 1
	return s[max(i, 0)]
}
