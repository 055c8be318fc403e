package tracebench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// ParseSeeds reads a seed list such as "42-51", "42,45" or "42-44,50".
func ParseSeeds(spec string) ([]int64, error) {
	var seeds []int64
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		from, err := strconv.ParseInt(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("seeds: %q is not a seed or range; want e.g. 42-51 or 42,45", part)
		}
		to := from
		if isRange {
			if to, err = strconv.ParseInt(hi, 10, 64); err != nil || to < from {
				return nil, fmt.Errorf("seeds: %q is not a range; want low-high with low ≤ high", part)
			}
		}
		if to-from >= 1000 || len(seeds) > 1000 {
			return nil, fmt.Errorf("seeds: %q asks for too many runs; allowed: up to 1000 seeds", spec)
		}
		for s := from; s <= to; s++ {
			seeds = append(seeds, s)
		}
	}
	return seeds, nil
}

// WriteTable prints a result as an aligned table, one policy per row.
func WriteTable(w io.Writer, r Result) error {
	fmt.Fprintf(w, "trace %s, %d seeds (%s)\n", r.Trace, len(r.Seeds), seedList(r.Seeds))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\talloc@100%\talloc@130%\tceiling\tfirst fail\tfrag rate@90%\tpods/s\tp99 µs\tpods/cpu-s\tp99 cpu µs\t")
	for _, p := range r.Policies {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f\t%.1f\t%.0f\t%.1f\t\n", p.Policy, p.AllocRatio100, p.AllocRatio130,
			p.Ceiling, p.FirstFailPct, p.FragRate90, p.PodsPerSec, p.P99DecisionUS, p.CPUPodsPerSec, p.P99DecisionCPUUS)
	}
	return tw.Flush()
}

func seedList(seeds []int64) string {
	if len(seeds) == 0 {
		return ""
	}
	contiguous := true
	for i := 1; i < len(seeds); i++ {
		contiguous = contiguous && seeds[i] == seeds[i-1]+1
	}
	if contiguous && len(seeds) > 1 {
		return fmt.Sprintf("%d-%d", seeds[0], seeds[len(seeds)-1])
	}
	parts := make([]string, len(seeds))
	for i, s := range seeds {
		parts[i] = strconv.FormatInt(s, 10)
	}
	return strings.Join(parts, ",")
}
