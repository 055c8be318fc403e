package web

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// A key given twice in one object is refused too; the same key in two objects is not.
func TestJSONTextFaultNamesTheField(t *testing.T) {
	for body, want := range map[string]string{
		`{"project": "default", "command": ["a", "b\u00e9\ud83d\ude00"], "env": {"A": {"value": "x"}}}`: "",
		`{"name": "a\u0000b"}`:                                 "name",
		`{"command": ["ok", "\ud800"]}`:                        "command[1]",
		`{"command": ["ok", "\udc00x"]}`:                       "command[1]",
		`{"command": ["ok", "\ud800\u0041"]}`:                  "command[1]",
		`{"command": ["ok", "\ud800\\udc00"]}`:                 "command[1]", // an escaped backslash, not a pair
		`{"resources": {"gpus": 1, "gpu_model": "\u0000"}}`:    "resources.gpu_model",
		`{"env": {"A": {"value": "\ud83d"}}}`:                  "env.A.value",
		`{"env": {"A\u0000": "x"}}`:                            "env",
		`{"a\u0000": 1}`:                                       "body",
		`[{"a": 1}, {"b": [true, null, "x\u0000"]}]`:           "[1].b[2]",
		"{\"name\": \"\xff\"}":                                 "name",
		`"\u0000"`:                                             "body",
		`{"name": "x\u0000", `:                                 "name", // read up to the fault before the end
		`{"name": `:                                            "",
		`{"name": "x", "name": "y"}`:                           "name",
		`{"env": {"A": "1", "a": "2", "B": "3", "A": "4"}}`:    "env.A",
		`[{"a": 1}, {"a": 2}, {"b": {"c": 1}, "d": {"c": 1}}]`: "",
		`not JSON \u0000`:                                      "",
	} {
		if field, message := jsonTextFault([]byte(body)); field != want || (want != "" && message == "") {
			t.Errorf("%s: %q %q, want the field %q", body, field, message, want)
		}
	}
}

// Whatever the body, the walk ends without a panic, and a body it lets through decodes
// to strings that are all UTF-8 text without NUL bytes.
func FuzzJSONTextFault(f *testing.F) {
	for _, seed := range []string{`{"a": ["b", {"c": "\ud83d\ude00"}]}`, `{"a": "\ud800"}`, `["\u0000"]`, `{"a":`, `"\\u0000"`, "\"\xff\""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		field, _ := jsonTextFault([]byte(body))
		var v any
		if field != "" || json.Unmarshal([]byte(body), &v) != nil {
			return
		}
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case string:
				if !plainText(v) || (strings.ContainsRune(v, utf8.RuneError) && !strings.Contains(body, "\ufffd") && !strings.Contains(strings.ToLower(body), `\ufffd`)) {
					t.Fatalf("%q let through %q", body, v)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			case map[string]any:
				for k, x := range v {
					walk(k)
					walk(x)
				}
			}
		}
		walk(v)
	})
}
