package audit

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/gantry-gpu/gantry/models"
)

// Events written before migration 0019 hold the values of secret job variables in
// clear: job_template.saved and job_template.deleted carry a template's spec, whose
// "env" did not keep secrets out yet. The chain cannot be rewritten without breaking
// its hashes, so the readers that show events mask them instead: Events (the audit
// page, the console's recent changes) and LineOf (Export: the page's download and
// gantry audit export) pass every detail through maskDetail; Verify and Head read the
// stored bytes, which the hashes are of.

// maskedValue is models.MaskedSecret as a JSON string.
const maskedValue = `"` + models.MaskedSecret + `"`

// maskDetail replaces, in a JSON detail, the value of every secret variable of an
// object under the key "env" (at any depth: a spec's env, or a spec's in a detail) with
// models.MaskedSecret, and says whether it replaced any. A variable is secret as a
// submission decides: marked {"value": …, "secret": true}, or written as a string or
// without "secret" under a name the rule matches (models.SecretEnvName); only
// "secret": false keeps such a name in clear. An empty value hides nothing and stays
// empty, as migration 0025 left templates' secrets. Everything else stays byte for byte.
func maskDetail(detail string) (string, bool) {
	// A key spelt with escapes ("\u0065nv") has a \u.
	if !strings.Contains(detail, `"env"`) && !strings.Contains(detail, `\u`) {
		return detail, false
	}
	var spans []span
	findSecrets([]byte(detail), 0, &spans)
	if len(spans) == 0 {
		return detail, false
	}
	var b strings.Builder
	at := 0
	for _, s := range spans {
		b.WriteString(detail[at:s.from])
		b.WriteString(maskedValue)
		at = s.to
	}
	b.WriteString(detail[at:])
	return b.String(), true
}

// span is where a secret value lies in a detail, quotes included.
type span struct{ from, to int }

// findSecrets appends, in order, the spans of the secret values in v, which starts at
// offset base of the detail.
func findSecrets(v []byte, base int, spans *[]span) {
	switch {
	case len(v) == 0:
	case v[0] == '{':
		members(v, func(key string, mv []byte, at int) {
			if key == "env" {
				envSecrets(mv, base+at, spans)
				return
			}
			findSecrets(mv, base+at, spans)
		})
	case v[0] == '[':
		items(v, func(iv []byte, at int) { findSecrets(iv, base+at, spans) })
	}
}

// envSecrets appends the spans of the secret values of env, the value of an "env" key
// starting at offset base of the detail.
func envSecrets(env []byte, base int, spans *[]span) {
	members(env, func(name string, v []byte, at int) {
		switch {
		case len(v) == 0:
		case v[0] == '"':
			if models.SecretEnvName(name) && filled(v) {
				*spans = append(*spans, span{base + at, base + at + len(v)})
			}
		case v[0] == '{':
			secret := models.SecretEnvName(name)
			var values []span
			members(v, func(key string, mv []byte, mat int) {
				switch {
				case key == "secret":
					// Anything but false (true, or a mark that is no boolean) masks.
					secret = string(mv) != "false"
				case key == "value" && mv[0] == '"' && filled(mv):
					from := base + at + mat
					values = append(values, span{from, from + len(mv)})
				}
			})
			if secret {
				*spans = append(*spans, values...)
			}
		}
	})
}

// filled says whether the JSON string s is not empty.
func filled(s []byte) bool { return !bytes.Equal(s, []byte(`""`)) }

// members calls fn with each member of the JSON object obj: its key, its value and the
// value's offset in obj. It stops at the first thing it cannot read.
func members(obj []byte, fn func(key string, v []byte, at int)) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return
	}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return
		}
		fn(key, v, int(dec.InputOffset())-len(v))
	}
}

// items calls fn with each item of the JSON array arr and its offset in arr.
func items(arr []byte, fn func(v []byte, at int)) {
	dec := json.NewDecoder(bytes.NewReader(arr))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return
	}
	for dec.More() {
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return
		}
		fn(v, int(dec.InputOffset())-len(v))
	}
}
