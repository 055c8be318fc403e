package slurm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxHosts bounds an expanded host list: no partition is larger, and a typo such
// as node[1-999999999] must not allocate a billion names.
const maxHosts = 65536

// ExpandHostlist expands a Slurm host list expression as squeue and scontrol print
// it (node[01-03,07],gpu5, rack[1-2]-n[1-2]) into host names, in order. Zero padding
// follows the width of each range's first number, as Slurm writes it.
func ExpandHostlist(expr string) ([]string, error) {
	expr = strings.TrimSpace(expr)
	if unset(expr) {
		return nil, nil
	}
	var out []string
	for _, item := range splitHosts(expr) {
		if item == "" {
			return nil, fmt.Errorf("host list %q: empty entry", shorten(expr))
		}
		hosts, err := expandItem(item, len(out))
		if err != nil {
			return nil, fmt.Errorf("host list %q: %w", shorten(expr), err)
		}
		out = append(out, hosts...)
	}
	return out, nil
}

// expandItem expands one entry: a prefix, then bracket groups with text between.
func expandItem(item string, have int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsAny(item, "]") {
			return nil, fmt.Errorf("%q: ']' without '['", item)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("%q: '[' without ']'", item)
	}
	end += open
	nums, err := expandRanges(item[open+1 : end])
	if err != nil {
		return nil, fmt.Errorf("%q: %w", item, err)
	}
	rest, err := expandItem(item[end+1:], have)
	if err != nil {
		return nil, err
	}
	if have+len(nums)*len(rest) > maxHosts {
		return nil, fmt.Errorf("more than %d hosts", maxHosts)
	}
	out := make([]string, 0, len(nums)*len(rest))
	for _, n := range nums {
		for _, r := range rest {
			out = append(out, item[:open]+n+r)
		}
	}
	return out, nil
}

// expandRanges expands "01-03,07" into 01 02 03 07.
func expandRanges(s string) ([]string, error) {
	var out []string
	for _, r := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !digits(lo) || isRange && !digits(hi) {
			return nil, fmt.Errorf("range %q is not N or N-M", r)
		}
		a, errA := strconv.Atoi(lo)
		b, errB := a, error(nil)
		if isRange {
			b, errB = strconv.Atoi(hi)
		}
		switch {
		case errA != nil || errB != nil:
			return nil, fmt.Errorf("range %q: %w", r, errors.Join(errA, errB))
		case b < a:
			return nil, fmt.Errorf("range %q runs backwards", r)
		case b-a >= maxHosts || len(out)+b-a >= maxHosts:
			return nil, fmt.Errorf("more than %d hosts", maxHosts)
		}
		for n := a; n <= b; n++ {
			out = append(out, fmt.Sprintf("%0*d", len(lo), n))
		}
	}
	return out, nil
}

func digits(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// splitHosts splits on commas outside brackets: node[1,3],gpu5.
func splitHosts(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			depth = max(depth-1, 0)
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
