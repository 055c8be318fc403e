package agentapi

import (
	"encoding/json"
	"strconv"
	"strings"
)

// ParseDevices reads the devices of an allocation as its Devices column keeps them: a
// JSON list, or nothing for none.
func ParseDevices(stored string) ([]Device, error) {
	if stored == "" {
		return nil, nil
	}
	if out, ok := devicesAsWritten(stored); ok {
		return out, nil
	}
	var out []Device
	if err := json.Unmarshal([]byte(stored), &out); err != nil {
		return nil, err
	}
	return out, nil
}

// devicesAsWritten reads stored as json.Marshal writes a []Device (its fields in their
// order, no spaces, strings of printable ASCII without escapes) and says whether it was
// so; anything else is left to encoding/json. A scheduling pass and the quota pages read
// every running allocation's devices, and through reflection that was a quarter of the
// home page at 7,700 running jobs.
func devicesAsWritten(stored string) ([]Device, bool) {
	r := devicesReader{rest: stored}
	if !r.skip("[") {
		return nil, false
	}
	out := make([]Device, 0, strings.Count(stored, "{"))
	if r.skip("]") {
		return out, r.rest == ""
	}
	for {
		var d Device
		ok := r.skip(`{"uuid":`) && r.text(&d.UUID) && r.skip(`,"milli":`) && r.number(&d.Milli) &&
			(!r.skip(`,"memory_mib":`) || r.number(&d.MemoryMiB)) &&
			(!r.skip(`,"mig_uuid":`) || r.text(&d.MIGUUID)) &&
			(!r.skip(`,"mig_profile":`) || r.text(&d.MIGProfile)) && r.skip("}")
		if !ok {
			return nil, false
		}
		out = append(out, d)
		if r.skip("]") {
			return out, r.rest == ""
		}
		if !r.skip(",") {
			return nil, false
		}
	}
}

// devicesReader is what is left of a stored device list to read.
type devicesReader struct{ rest string }

func (r *devicesReader) skip(prefix string) bool {
	rest, ok := strings.CutPrefix(r.rest, prefix)
	r.rest = rest
	return ok
}

// text reads a JSON string that needs no unescaping: printable ASCII up to its quote.
func (r *devicesReader) text(dest *string) bool {
	if !r.skip(`"`) {
		return false
	}
	for i := 0; i < len(r.rest); i++ {
		switch c := r.rest[i]; {
		case c == '"':
			*dest, r.rest = r.rest[:i], r.rest[i+1:]
			return true
		case c == '\\' || c < 0x20 || c > 0x7e:
			return false
		}
	}
	return false
}

// number reads a JSON integer: an optional minus, then 0 or digits not starting with 0.
func (r *devicesReader) number(dest *int64) bool {
	i := 0
	if i < len(r.rest) && r.rest[i] == '-' {
		i++
	}
	start := i
	for i < len(r.rest) && r.rest[i] >= '0' && r.rest[i] <= '9' {
		i++
	}
	if i == start || r.rest[start] == '0' && i > start+1 {
		return false
	}
	n, err := strconv.ParseInt(r.rest[:i], 10, 64)
	if err != nil {
		return false
	}
	*dest, r.rest = n, r.rest[i:]
	return true
}
