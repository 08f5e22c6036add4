package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// checkStrict walks a JSON document beside the Go type it decodes into and
// refuses what encoding/json lets through: a key given twice in one object
// (json keeps the last, so two readers may disagree on what was sent) and
// a struct field named in another case ("Retention" for "retention": json
// matches it case-insensitively). Objects decoded into maps, interfaces or
// raw messages are checked for duplicates only.
//
// It also refuses a string, value or name, that is not valid UTF-8: an
// invalid byte, or an escaped UTF-16 surrogate without its pair.
// encoding/json replaces those with U+FFFD in Go strings, but keeps them
// as sent in raw JSON (shared-table attributes), which would then be
// stored and answered as they are, making the answers invalid JSON.
//
// The walk runs on jsontext, whose decoder finds duplicate names and
// invalid UTF-8 itself, in every value, without allocating; it only
// descends where a struct's field names are to be checked, and skips
// every other value whole.
func checkStrict(data []byte, t reflect.Type) error {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	err := walkValue(dec, t)
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		if errors.Is(se.Err, jsontext.ErrDuplicateName) {
			return fmt.Errorf("key %q appears twice in %s", se.JSONPointer.LastToken(), where(se.JSONPointer.Parent()))
		}
		// encoding/json has read the body already, so that what is
		// left to find is a string that is not valid UTF-8.
		return fmt.Errorf("a string at %s, byte %d, is not valid UTF-8 (an invalid byte, or an escaped surrogate without its pair); send text as UTF-8, and binary data in base64", whereValue(se.JSONPointer), se.ByteOffset)
	}
	return err
}

// whereValue names the value at a JSON pointer for an error message.
func whereValue(p jsontext.Pointer) string {
	if p == "" {
		return "the body"
	}
	return string(p)
}

// where names the value at a JSON pointer (RFC 6901) for an error message.
func where(p jsontext.Pointer) string {
	if p == "" {
		return "the body"
	}
	return "the object at " + string(p)
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

func walkValue(dec *jsontext.Decoder, t reflect.Type) error {
	t = checked(t)
	if t == nil {
		return dec.SkipValue()
	}
	switch dec.PeekKind() {
	case '{':
		return walkObject(dec, t)
	case '[':
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return dec.SkipValue()
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		for dec.PeekKind() != ']' {
			if err := walkValue(dec, t.Elem()); err != nil {
				return err
			}
		}
		_, err := dec.ReadToken() // ']'
		return err
	}
	return dec.SkipValue()
}

func walkObject(dec *jsontext.Decoder, t reflect.Type) error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	switch t.Kind() {
	case reflect.Struct:
		fields = jsonFields(t)
	case reflect.Map:
		elem = t.Elem()
	default:
		return dec.SkipValue()
	}
	if _, err := dec.ReadToken(); err != nil { // '{'
		return err
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		next := elem
		if fields != nil {
			key := tok.String()
			ft, ok := fields[key]
			if !ok {
				for name := range fields {
					if strings.EqualFold(name, key) {
						return fmt.Errorf("unknown field %q in %s; field names are case-sensitive: did you mean %q?", key, where(dec.StackPointer().Parent()), name)
					}
				}
				// Unknown fields are DisallowUnknownFields' to report.
			}
			next = ft
		}
		if err := walkValue(dec, next); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken() // '}'
	return err
}

// checkedTypes caches checked.
var checkedTypes sync.Map // reflect.Type → reflect.Type (nil: skip)

// checked returns the type whose JSON a walk must descend into to check
// field names, with pointers removed, or nil when the value holds no
// struct that encoding/json decodes field by field: such a value only
// needs its duplicate names found, which skipping it does.
func checked(t reflect.Type) reflect.Type {
	if t == nil {
		return nil
	}
	if v, ok := checkedTypes.Load(t); ok {
		c, _ := v.(reflect.Type)
		return c
	}
	c := t
	for c.Kind() == reflect.Pointer {
		c = c.Elem()
	}
	if !holdsStruct(c, map[reflect.Type]bool{}) {
		c = nil
	}
	checkedTypes.Store(t, c)
	return c
}

// holdsStruct reports whether values of t may hold, at any depth, a
// struct decoded field by field (types that decode themselves, and raw
// JSON, do not count).
func holdsStruct(t reflect.Type, seen map[reflect.Type]bool) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || reflect.PointerTo(t).Implements(unmarshalerType) || seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Struct:
		return true
	case reflect.Map, reflect.Slice, reflect.Array:
		return holdsStruct(t.Elem(), seen)
	}
	return false
}

// fieldsOf caches jsonFields.
var fieldsOf sync.Map // reflect.Type → map[string]reflect.Type

// jsonFields maps a struct's JSON field names to their types, following
// embedded structs as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if v, ok := fieldsOf.Load(t); ok {
		m, _ := v.(map[string]reflect.Type)
		return m
	}
	m := structFields(t)
	fieldsOf.Store(t, m)
	return m
}

func structFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range structFields(ft) {
					if _, dup := out[k]; !dup {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
