package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
)

// checkStrict walks one JSON document against the Go type it will be decoded into and
// refuses what encoding/json lets through although the contract does not: a member name
// that matches a field only up to case ({"Name": ...} for "name"), a member given twice,
// and null anywhere (no field of a request takes null; encoding/json would read it as
// "omitted"). Types are left to encoding/json, which reports them with the field's name;
// so is everything inside a json.RawMessage, whose own decoder checks it. The walk stops
// at the first departure or syntax error and returns it.
func checkStrict(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // never parse numbers as floats: 1e400 is encoding/json's to refuse
	return walkStrict(dec, t, "", 0)
}

// maxDepth bounds the nesting the walk follows. No request nests deeper than five
// levels; the limit keeps a body of millions of '[' from recursing as deep (Decoder.Token
// has no depth limit of its own, unlike Decode).
const maxDepth = 32

// strictError is a departure checkStrict found; its message names the member's path.
type strictError struct{ msg string }

func (e *strictError) Error() string { return e.msg }

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// walkStrict reads one value from dec; t is the type it decodes into (nil when unknown,
// e.g. a type mismatch that encoding/json will report afterwards). at is the value's
// path for messages ("records[2].headers").
func walkStrict(dec *json.Decoder, t reflect.Type, at string, depth int) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		return &strictError{fmt.Sprintf("%s: null is not a valid value (omit the field instead)", name(at))}
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar: its type is encoding/json's to check
	}
	if depth >= maxDepth {
		return &strictError{fmt.Sprintf("%s: nested more than %d levels deep", name(at), maxDepth)}
	}
	if t == rawMessageType {
		t = nil
	}
	switch d {
	case '{':
		var fields map[string]reflect.Type
		var elem reflect.Type
		switch {
		case t != nil && t.Kind() == reflect.Struct:
			fields = jsonFields(t)
		case t != nil && t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string) // the decoder only returns strings as member names
			path := at + "." + k
			if at == "" {
				path = k
			}
			if seen[k] {
				return &strictError{fmt.Sprintf("%s: member given twice", name(path))}
			}
			seen[k] = true
			vt := elem
			if fields != nil {
				ft, known := fields[k]
				if !known {
					return &strictError{fmt.Sprintf("unknown field %s%s", name(path), caseHint(fields, k))}
				}
				vt = ft
			}
			if err := walkStrict(dec, vt, path, depth+1); err != nil {
				return err
			}
		}
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walkStrict(dec, elem, fmt.Sprintf("%s[%d]", at, i), depth+1); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

func name(path string) string {
	if path == "" {
		return "the body"
	}
	return fmt.Sprintf("%q", path)
}

// caseHint points at the field a name matches only up to case.
func caseHint(fields map[string]reflect.Type, k string) string {
	for f := range fields {
		if strings.EqualFold(f, k) {
			return fmt.Sprintf(" (names are case-sensitive: did you mean %q?)", f)
		}
	}
	return ""
}

var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields maps the JSON member names of struct t (its json tags, embedded structs
// flattened as encoding/json does) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		n, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && n == "" && f.Type.Kind() == reflect.Struct {
			for k, v := range jsonFields(f.Type) {
				m[k] = v
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if n == "" {
			n = f.Name
		}
		m[n] = f.Type
	}
	fieldCache.Store(t, m)
	return m
}

// decodeStrict decodes data, exactly one JSON value, into v: checkStrict's rules, then
// encoding/json refusing unknown fields and trailing data.
func decodeStrict(data []byte, v any) error {
	if err := checkStrict(data, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err == nil {
			return errTrailing
		}
		return err
	}
	return nil
}

var errTrailing = errors.New("data after the JSON value")
