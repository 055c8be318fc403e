package slurm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// sep separates the fields of the formats this package asks for: a control character
// that no job name, reason or comment a person types contains, unlike "|" or " ".
const sep = "\x1f"

// fieldError is a value that does not parse; the line parsers wrap it in *ParseError.
type fieldError struct {
	field, text string
	err         error
}

func (e *fieldError) Error() string { return fmt.Sprintf("%s %q: %v", e.field, shorten(e.text), e.err) }

// fields splits one output line into exactly n fields. The last field takes the rest
// of the line, separators included, so only the last may hold free text safely.
func fields(line string, n int) ([]string, error) {
	f := strings.SplitN(line, sep, n)
	if len(f) != n {
		return nil, fmt.Errorf("has %d fields, want %d", len(f), n)
	}
	return f, nil
}

// lines returns the non-empty lines of out with their 1-based numbers.
func lines(out []byte) (nums []int, text []string) {
	for i, l := range strings.Split(string(out), "\n") {
		l = strings.TrimRight(l, "\r")
		if strings.TrimSpace(l) == "" {
			continue
		}
		nums = append(nums, i+1)
		text = append(text, l)
	}
	return nums, text
}

// unset reports whether Slurm printed "no value" for a field.
func unset(s string) bool {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "", "N/A", "NONE", "UNKNOWN", "(NULL)", "NOT_SET", "NONE ASSIGNED":
		return true
	}
	return false
}

// parseTime reads a timestamp as Slurm prints it with SLURM_TIME_FORMAT=standard and
// TZ=UTC (2006-01-02T15:04:05); unset values give the zero time.
func parseTime(field, s string) (time.Time, error) {
	if unset(s) {
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", strings.TrimSpace(s), time.UTC)
	if err != nil {
		return time.Time{}, &fieldError{field, s, errors.New("want a time like 2006-01-02T15:04:05")}
	}
	return t, nil
}

// maxDurationSecs bounds durations well inside time.Duration: 100 years.
const maxDurationSecs = 100 * 366 * 86400

// parseDuration reads a time limit or elapsed time as Slurm prints it
// ([days-][hours:]minutes:seconds); UNLIMITED, INFINITE and unset values give 0.
func parseDuration(field, s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if unset(s) || strings.EqualFold(s, "UNLIMITED") || strings.EqualFold(s, "INFINITE") {
		return 0, nil
	}
	bad := &fieldError{field, s, errors.New("want [days-][hours:]minutes:seconds or UNLIMITED")}
	var days int64
	if d, rest, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.ParseInt(d, 10, 32)
		if err != nil || n < 0 {
			return 0, bad
		}
		days, s = n, rest
	}
	parts := strings.Split(s, ":")
	if len(parts) > 3 {
		return 0, bad
	}
	var secs int64
	for _, p := range parts {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return 0, bad
		}
		secs = secs*60 + n
	}
	// As sbatch reads them: minutes, minutes:seconds, hours:minutes:seconds; after
	// "days-": hours, hours:minutes, hours:minutes:seconds.
	switch {
	case len(parts) == 1 && days == 0:
		secs *= 60
	case len(parts) == 1:
		secs *= 3600
	case len(parts) == 2 && days > 0:
		secs *= 60
	}
	total := days*86400 + secs
	if total > maxDurationSecs {
		return 0, &fieldError{field, s, errors.New("longer than 100 years")}
	}
	return time.Duration(total) * time.Second, nil
}

// parseMemMiB reads a memory size such as 100M, 1G, 1024 (MiB) or 500K into MiB,
// rounding up. A trailing "c" (per CPU) or "n" (per node), as squeue prints, is dropped.
func parseMemMiB(field, s string) (int64, error) {
	s = strings.TrimSpace(s)
	if unset(s) {
		return 0, nil
	}
	s = strings.TrimRight(s, "cn")
	bad := &fieldError{field, s, errors.New("want a size such as 512M or 4G")}
	if s == "" {
		return 0, bad
	}
	mult := 1.0
	switch s[len(s)-1] {
	case 'K', 'k':
		mult = 1.0 / 1024
	case 'M', 'm':
	case 'G', 'g':
		mult = 1024
	case 'T', 't':
		mult = 1024 * 1024
	case 'P', 'p':
		mult = 1024 * 1024 * 1024
	default:
		s += "M"
	}
	v, err := strconv.ParseFloat(s[:len(s)-1], 64)
	if err != nil || v < 0 || v*mult > 1<<50 {
		return 0, bad
	}
	mib := v * mult
	n := int64(mib)
	if float64(n) < mib {
		n++
	}
	return n, nil
}

// parseInt reads a non-negative count; unset values give 0.
func parseInt(field, s string) (int, error) {
	s = strings.TrimSpace(s)
	if unset(s) {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return 0, &fieldError{field, s, errors.New("want a whole number")}
	}
	return int(n), nil
}

// parseExitCode reads sacct's code:signal.
func parseExitCode(field, s string) (code, signal int, err error) {
	c, sg, ok := strings.Cut(strings.TrimSpace(s), ":")
	bad := &fieldError{field, s, errors.New("want code:signal such as 0:0")}
	if !ok {
		return 0, 0, bad
	}
	if code, err = strconv.Atoi(c); err != nil || code < 0 || code > 255 {
		return 0, 0, bad
	}
	if signal, err = strconv.Atoi(sg); err != nil || signal < 0 || signal > 255 {
		return 0, 0, bad
	}
	return code, signal, nil
}

// parseTRES reads a TRES list such as billing=2,cpu=2,gres/gpu:a100=2,gres/gpu=2,
// mem=1024M,node=1. Resources Gantry does not price (energy, fs/disk, ...) are skipped.
func parseTRES(field, s string) (TRES, error) {
	var t TRES
	if unset(s) {
		return t, nil
	}
	for _, item := range strings.Split(strings.TrimSpace(s), ",") {
		k, v, ok := strings.Cut(item, "=")
		if !ok || k == "" {
			return TRES{}, &fieldError{field, s, fmt.Errorf("item %q is not name=value", item)}
		}
		var err error
		switch {
		case k == "cpu":
			t.CPUs, err = parseInt(field+" cpu", v)
		case k == "mem":
			t.MemoryMiB, err = parseMemMiB(field+" mem", v)
		case k == "node":
			t.Nodes, err = parseInt(field+" node", v)
		case k == "billing":
			var b int
			b, err = parseInt(field+" billing", v)
			t.Billing = int64(b)
		case k == "gres/gpu":
			t.GPUs, err = parseInt(field+" gres/gpu", v)
		case strings.HasPrefix(k, "gres/gpu:"):
			var n int
			if n, err = parseInt(field+" "+k, v); err == nil {
				if t.GPUsByType == nil {
					t.GPUsByType = map[string]int{}
				}
				t.GPUsByType[strings.TrimPrefix(k, "gres/gpu:")] += n
			}
		}
		if err != nil {
			return TRES{}, err
		}
	}
	return t, nil
}

// parseGPUGres reads the GPUs of a GRES list such as gpu:a100:2,gpu:l4:0(IDX:N/A) or
// gpu:4(S:0-1),mps:100; other GRES (mps, shard, nic) are skipped.
func parseGPUGres(field, s string) ([]GRES, error) {
	if unset(s) {
		return nil, nil
	}
	var out []GRES
	for _, item := range splitTopLevel(strings.TrimSpace(s)) {
		if i := strings.IndexByte(item, '('); i >= 0 {
			item = item[:i]
		}
		parts := strings.Split(item, ":")
		if parts[0] != "gpu" {
			continue
		}
		g := GRES{Count: 1}
		var err error
		switch len(parts) {
		case 1:
		case 2:
			if g.Count, err = parseInt(field, parts[1]); err != nil {
				// gpu:a100 with no count means one of that type.
				g.Type, g.Count, err = parts[1], 1, nil
			}
		case 3:
			g.Type = parts[1]
			g.Count, err = parseInt(field, parts[2])
		default:
			err = &fieldError{field, item, errors.New("want gpu[:type]:count")}
		}
		if err != nil {
			return nil, err
		}
		if g.Type == "" && len(parts) == 3 {
			return nil, &fieldError{field, item, errors.New("empty GPU type")}
		}
		out = append(out, g)
	}
	return out, nil
}

// splitTopLevel splits on commas outside parentheses: gpu:a100:2(IDX:0,2),gpu:l4:1.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// keyValues reads one line of `scontrol show ... -o`: Key=value pairs separated by
// spaces, where a value may itself hold spaces (OS=Linux 6.1 #1 SMP): a word without
// "=" belongs to the value before it.
func keyValues(line string) (map[string]string, error) {
	out := map[string]string{}
	last := ""
	for _, w := range strings.Fields(line) {
		k, v, ok := strings.Cut(w, "=")
		if ok && k != "" && isKey(k) {
			out[k], last = v, k
			continue
		}
		if last == "" {
			return nil, fmt.Errorf("starts with %q, not Key=value", shorten(w))
		}
		out[last] += " " + w
	}
	return out, nil
}

func isKey(k string) bool {
	for i, r := range k {
		letter := r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || r == '_' || r == '/' || r == ':')) {
			return false
		}
	}
	return true
}
