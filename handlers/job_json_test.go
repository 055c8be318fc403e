package handlers

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// jsonStrings are strings that encoding/json escapes in every way it does.
var jsonStrings = []string{
	"", "train-01", `quote " backslash \ slash /`, "<script>&amp;</script>", "tab\tnew\nline\rcr\bbs\fff",
	"\x00\x01\x1f\x7f", "ünïcödé 日本 🚀", "line\u2028para\u2029", "bad \xff utf-8 \xc3", "\xe6\x97", "é\xe6\x97x",
}

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	strs := append([]string(nil), jsonStrings...)
	for c := range 256 {
		strs = append(strs, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"z")
	}
	for _, s := range strs {
		checkJSONString(t, s)
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add(s)
	}
	f.Fuzz(checkJSONString)
}

func checkJSONString(t *testing.T, s string) {
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := appendJSONString(nil, s); string(got) != string(want) {
		t.Errorf("%q: appendJSONString wrote %s, encoding/json %s", s, got, want)
	}
}

// filledJob is a job with every field set, strings from jsonStrings and numbers
// counting up, found by reflection so that a field added to jobJSON is in it too.
func filledJob(t *testing.T) jobJSON {
	var v jobJSON
	n := 0
	var fill func(f reflect.Value)
	fill = func(f reflect.Value) {
		n++
		switch f.Kind() {
		case reflect.String:
			f.SetString(jsonStrings[n%len(jsonStrings)] + strconv.Itoa(n))
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(n) * 1_000_003)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
			fill(f.Elem())
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
			fill(f.Index(0))
		case reflect.Map:
			f.Set(reflect.MakeMap(f.Type()))
			k, e := reflect.New(f.Type().Key()).Elem(), reflect.New(f.Type().Elem()).Elem()
			fill(k)
			fill(e)
			f.SetMapIndex(k, e)
		case reflect.Struct:
			if tm, ok := f.Addr().Interface().(*time.Time); ok {
				*tm = time.Date(2026, 12, 1, 14, n, 5, n*1_000_001, time.FixedZone("", (n%20-10)*1800))
				return
			}
			for i := range f.NumField() {
				fill(f.Field(i))
			}
		default:
			t.Fatalf("filledJob: no value for a %s field", f.Type())
		}
	}
	fill(reflect.ValueOf(&v).Elem())
	return v
}

func TestAppendJobJSONMatchesEncodingJSON(t *testing.T) {
	listed := filledJob(t)
	// What lists leave out, which sends a job to encoding/json.
	listed.Command, listed.Env, listed.SecretEnv, listed.Events, listed.Allocations = nil, nil, nil, nil, nil
	listed.RerunOf, listed.ImageName = nil, ""
	utc := listed
	utc.SubmittedAt, utc.StartedAt, utc.FinishedAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), nil, nil
	utc.ExitCode = new(int)
	empties := jobJSON{Command: []string{}, Env: map[string]string{}, SecretEnv: []string{}, Events: []jobEventJSON{}, Allocations: []allocationJSON{}}
	for name, v := range map[string]jobJSON{
		"zero":                  {},
		"listed":                listed,
		"UTC, not started":      utc,
		"empty lists":           empties,
		"every field":           filledJob(t),
		"with events only":      {Name: "x", Events: []jobEventJSON{{To: "queued"}}},
		"with a command only":   {Name: "x", Command: []string{"python", "train.py"}},
		"with environment only": {Name: "x", Env: map[string]string{"B": "2", "A": "1"}},
	} {
		want, err := json.Marshal(&v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendJobJSON([]byte("prefix,"), &v)
		if err != nil || string(got) != "prefix,"+string(want) {
			t.Errorf("%s: appendJobJSON wrote %s (%v), encoding/json\n%s", name, got, err, want)
		}
	}
}

func TestAppendJobJSONFailsWhereEncodingJSONDoes(t *testing.T) {
	late := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, v := range map[string]jobJSON{
		"submitted after 9999": {SubmittedAt: late},
		"started after 9999":   {StartedAt: &late},
		"finished after 9999":  {FinishedAt: &late},
	} {
		if _, err := json.Marshal(&v); err == nil {
			t.Fatalf("%s: encoding/json encodes it", name)
		}
		if b, err := appendJobJSON(nil, &v); err == nil {
			t.Errorf("%s: appendJobJSON wrote %s", name, b)
		}
	}
}
