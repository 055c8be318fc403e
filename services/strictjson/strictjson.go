// Package strictjson finds what encoding/json lets pass or blames on the wrong field when
// it decodes a request's body into a Go value: it walks the JSON beside the value's type
// and names each fault by its path ("env.A", "command[1]", "resources.GPUs"), as the
// gate's text checks (web/text.go) name theirs.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/gantry-gpu/gantry/models"
)

// Check returns a *models.FieldError for the first key or value of body that does not
// fit v's type, named by its path: a key that is a field's name in other letter case
// (encoding/json takes {"Project": …} for "project" unsaid), and a value of the wrong
// type (encoding/json names an array's or a map's field for a bad element, "command" or
// "env", or nothing at all for an error of the element's own UnmarshalJSON). Keys that
// are no field's name at all, and a body that is not JSON, are left to the decoder to
// refuse in its caller's words.
func Check(body []byte, v any) error {
	if !json.Valid(body) {
		return nil
	}
	return walk(reflect.TypeOf(v), bytes.TrimSpace(body), "")
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func walk(t reflect.Type, raw []byte, path string) error {
	for t.Kind() == reflect.Pointer {
		if isNull(raw) {
			return nil // encoding/json sets the pointer to nil
		}
		t = t.Elem()
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(jsonUnmarshaler) || pt.Implements(textUnmarshaler) {
		return leaf(t, raw, path)
	}
	if isNull(raw) {
		return nil // encoding/json leaves the value as it was
	}
	switch t.Kind() {
	case reflect.Struct:
		if raw[0] != '{' {
			return leaf(t, raw, path)
		}
		fields := fieldsOf(t)
		return members(raw, func(key string, value []byte) error {
			f, ok := fields[key]
			if ok {
				return walk(f, value, join(path, key))
			}
			if name, ok := foldedName(fields, key); ok {
				return models.Invalid(join(path, key), "is not a field: keys are matched exactly, write %q", name)
			}
			return nil // an unknown field: the decoder refuses it in its caller's words
		})
	case reflect.Map:
		if raw[0] != '{' {
			return leaf(t, raw, path)
		}
		return members(raw, func(key string, value []byte) error {
			return walk(t.Elem(), value, join(path, key))
		})
	case reflect.Slice, reflect.Array:
		if raw[0] != '[' || t.Elem().Kind() == reflect.Uint8 {
			return leaf(t, raw, path) // a []byte reads a base64 string
		}
		i := 0
		return elements(raw, func(value []byte) error {
			err := walk(t.Elem(), value, path+"["+strconv.Itoa(i)+"]")
			i++
			return err
		})
	case reflect.Interface:
		return nil
	}
	return leaf(t, raw, path)
}

// leaf decodes raw alone into a new value of type t and names its error by path.
func leaf(t reflect.Type, raw []byte, path string) error {
	err := json.Unmarshal(raw, reflect.New(t).Interface())
	var te *json.UnmarshalTypeError
	var fe *models.FieldError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		return models.Invalid(field(path), "must be %s, not %s", Kind(te.Type), te.Value)
	case errors.As(err, &fe):
		return models.Invalid(field(path), "%s", fe.Message)
	}
	return models.Invalid(field(path), "%v", err)
}

// Kind says what JSON value a Go type reads: "an integer", "a string", "an object".
func Kind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another JSON value"
}

// fieldsOf maps the JSON names of a struct's fields, as encoding/json finds them (a
// tag's name or the Go name; an embedded struct's fields promoted), to their types.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case f.Anonymous && name == "" && ft.Kind() == reflect.Struct:
			for n, typ := range fieldsOf(ft) {
				if _, ok := out[n]; !ok {
					out[n] = typ
				}
			}
			continue
		case !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		if strings.Contains(opts, "string") {
			// A number or bool written as a JSON string: the decoder judges it whole.
			out[name] = reflect.TypeFor[json.RawMessage]()
			continue
		}
		out[name] = f.Type
	}
	return out
}

// foldedName finds the field encoding/json would take key for, ignoring case.
func foldedName(fields map[string]reflect.Type, key string) (string, bool) {
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if strings.EqualFold(name, key) {
			return name, true
		}
	}
	return "", false
}

// members calls each with every key of the JSON object raw and its value, in order.
func members(raw []byte, each func(key string, value []byte) error) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return err
		}
		if err := each(tok.(string), value); err != nil {
			return err
		}
	}
	return nil
}

// elements calls each with every element of the JSON array raw, in order.
func elements(raw []byte, each func(value []byte) error) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return err
	}
	for dec.More() {
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return err
		}
		if err := each(value); err != nil {
			return err
		}
	}
	return nil
}

func isNull(raw []byte) bool { return string(raw) == "null" }

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// field names the body as a whole where the path is empty.
func field(path string) string {
	if path == "" {
		return "body"
	}
	return path
}
