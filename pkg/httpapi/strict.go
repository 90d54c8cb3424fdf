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

	"github.com/go-json-experiment/json/jsontext"
)

// checkStrict walks one JSON document against the Go type it will be decoded into and
// refuses what encoding/json lets through although the contract does not: a member name
// that matches a field only up to case ({"Name": ...} for "name"), a member given twice,
// null anywhere (no field of a request takes null; encoding/json would read it as
// "omitted") and invalid UTF-8 (which encoding/json would replace). The tokenizer is
// jsontext's (github.com/go-json-experiment/json), which refuses repeated names and
// invalid UTF-8 itself and reads scalars without allocating. Types are left to
// encoding/json, which reports them with the field's name; so is everything inside a
// json.RawMessage, whose own decoder checks it. The walk stops at the first departure or
// syntax error and returns it.
func checkStrict(data []byte, t reflect.Type) error {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	return walkStrict(dec, t)
}

// maxDepth bounds the nesting the walk follows. No request nests deeper than five
// levels; refusing more keeps a body of millions of '[' cheap.
const maxDepth = 32

// strictError is a departure checkStrict found; its message names the member's place.
type strictError struct{ msg string }

func (e *strictError) Error() string { return e.msg }

// strictFail returns a strictError about the value dec has just read, named by its JSON
// pointer.
func strictFail(dec *jsontext.Decoder, format string, args ...any) error {
	return &strictError{name(string(dec.StackPointer())) + ": " + fmt.Sprintf(format, args...)}
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// walkStrict reads one value from dec; t is the type it decodes into (nil when unknown,
// e.g. a type mismatch that encoding/json will report afterwards).
func walkStrict(dec *jsontext.Decoder, t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	kind := tok.Kind()
	if kind == 'n' {
		if t != nil && t.Implements(strictNullableType) {
			return nil
		}
		return strictFail(dec, "null is not a valid value (omit the field instead)")
	}
	if t != nil && t.Implements(strictShapedType) {
		t = reflect.Zero(t).Interface().(strictShaped).strictShape(kind)
	}
	if kind != '{' && kind != '[' {
		return nil // a scalar: its type is encoding/json's to check
	}
	if dec.StackDepth() > maxDepth {
		return strictFail(dec, "nested more than %d levels deep", maxDepth)
	}
	if t == rawMessageType {
		t = nil
	}
	if kind == '{' {
		var fields map[string]reflect.Type
		var elem reflect.Type
		switch {
		case t != nil && t.Kind() == reflect.Struct:
			fields = jsonFields(t)
		case t != nil && t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		for dec.PeekKind() != '}' {
			kt, err := dec.ReadToken()
			if err != nil {
				return err
			}
			vt := elem
			if fields != nil {
				k := kt.String()
				ft, known := fields[k]
				if !known {
					return &strictError{"unknown field " + name(string(dec.StackPointer())) + caseHint(fields, k)}
				}
				vt = ft
			}
			if err := walkStrict(dec, vt); err != nil {
				return err
			}
		}
	} else {
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.PeekKind() != ']' {
			if err := walkStrict(dec, elem); err != nil {
				return err
			}
		}
	}
	_, err = dec.ReadToken() // the closing delimiter
	return err
}

// strictNullable is implemented by the few request types that take null (a record's
// value, a header's value in the list form): the walk lets null through for them.
type strictNullable interface{ strictNullable() }

// strictShaped is implemented by a request type that takes more than one JSON shape
// (a record's headers: an object or an array); it names the type the walk checks a value
// of the given kind ('{' or '[') against.
type strictShaped interface {
	strictShape(kind jsontext.Kind) reflect.Type
}

var (
	strictNullableType = reflect.TypeFor[strictNullable]()
	strictShapedType   = reflect.TypeFor[strictShaped]()
)

// name renders a JSON pointer for a message ("the body" for the root).
func name(pointer string) string {
	if pointer == "" {
		return "the body"
	}
	return fmt.Sprintf("%q", pointer)
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
