// Package fill gives every field of a value something other than its zero value, for tests
// that must see every field of a type on the wire: golden JSON that changes when a field is
// added, and mappings between types that must not drop one.
package fill

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"
)

// Time is what time.Time fields are set to.
var Time = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// Value returns a T with every field set (see Set).
func Value[T any]() T {
	var v T
	Set(&v)
	return v
}

// Set fills what p points to. A string is set to its field's JSON name (its Go name when it
// has none), a number to 1, a bool to true, a time to Time; a slice gets one element, a map
// one entry (key "key"), a pointer a filled value, an interface the field's name as a string,
// and json.RawMessage {"NAME":"NAME"}. A struct type met inside itself (a tree's children) is
// filled once more and then left empty, so that filling ends.
func Set(p any) {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		panic("fill.Set needs a non-nil pointer")
	}
	f := filler{seen: map[reflect.Type]int{}}
	f.set(v.Elem(), "value")
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

type filler struct {
	seen map[reflect.Type]int // struct types on the current path, and how often
}

// set fills v; it reports false when it left v zero (a recursion ended).
func (f filler) set(v reflect.Value, name string) bool {
	switch t := v.Type(); {
	case t == timeType:
		v.Set(reflect.ValueOf(Time))
		return true
	case t == rawType:
		b, _ := json.Marshal(map[string]string{name: name})
		v.SetBytes(b)
		return true
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(name)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Interface:
		if v.NumMethod() != 0 {
			return false // no value to choose for an interface with methods
		}
		v.Set(reflect.ValueOf(name))
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		if !f.set(e.Elem(), name) {
			return false
		}
		v.Set(e)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte(name))
			return true
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		if !f.set(s.Index(0), name) {
			return false
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			f.set(v.Index(i), name)
		}
	case reflect.Map:
		k := reflect.New(v.Type().Key()).Elem()
		f.set(k, "key")
		e := reflect.New(v.Type().Elem()).Elem()
		if !f.set(e, name) {
			return false
		}
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		t := v.Type()
		if f.seen[t] >= 2 {
			return false
		}
		f.seen[t]++
		defer func() { f.seen[t]-- }()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			f.set(v.Field(i), jsonName(sf))
		}
	default:
		return false
	}
	return true
}

func jsonName(sf reflect.StructField) string {
	if n, _, _ := strings.Cut(sf.Tag.Get("json"), ","); n != "" && n != "-" {
		return n
	}
	return sf.Name
}
