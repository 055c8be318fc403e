package store

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// The SQL of an unfiltered list is kept by listKey: every field of JobFilter must
// make a list filtered or be part of the key, or a list with a field added to
// neither would be served another list's SQL.
func TestListKeyCoversJobFilter(t *testing.T) {
	inKey := map[string]bool{}
	for i := range reflect.TypeFor[listKey]().NumField() {
		inKey[strings.ToLower(reflect.TypeFor[listKey]().Field(i).Name)] = true
	}
	typ := reflect.TypeFor[JobFilter]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if inKey[strings.ToLower(name)] {
			continue
		}
		var f JobFilter
		v := reflect.ValueOf(&f).Elem().Field(i)
		switch {
		case v.Kind() == reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		case v.Kind() == reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
		case v.Kind() == reflect.Int64 || v.Kind() == reflect.Int:
			v.SetInt(1)
		case v.Kind() == reflect.String:
			v.SetString("x")
		case v.Type() == reflect.TypeFor[time.Time]():
			v.Set(reflect.ValueOf(time.Now()))
		default:
			t.Fatalf("JobFilter.%s is a %s: set it here", name, v.Type())
		}
		if unfiltered(f) {
			t.Errorf("JobFilter.%s is set, but unfiltered says the list has no filter, and listKey lacks it", name)
		}
	}
}
