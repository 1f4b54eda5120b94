// Package strictjson decodes JSON objects strictly: unknown members, names
// that match a field only case-insensitively and values of the wrong type
// are errors naming the offending member's JSON pointer.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Error is a member that does not decode: its JSON pointer and what is
// wrong with it.
type Error struct {
	Pointer string
	Message string
}

func (e *Error) Error() string { return e.Pointer + ": " + e.Message }

func errorf(pointer, format string, args ...any) *Error {
	return &Error{Pointer: OrRoot(pointer), Message: fmt.Sprintf(format, args...)}
}

// Decode decodes the JSON object raw, found at pointer, into v, rejecting
// unknown members and values of the wrong type. An absent value (empty or
// null) leaves v unchanged. A non-nil error is an *Error.
func Decode(raw []byte, pointer string, v any) error {
	if Absent(raw) {
		return nil
	}
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return errorf(pointer, "must be an object")
	}
	if err := exactNames(raw, pointer, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, err := dec.Token(); err != io.EOF {
			return errorf(pointer, "is not valid: data after the object")
		}
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		field := pointer
		if typeErr.Field != "" {
			field += "/" + strings.ReplaceAll(typeErr.Field, ".", "/")
		}
		return errorf(field, "must be %s", describeType(typeErr.Type))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return errorf(pointer+"/"+EscapeName(strings.Trim(name, `"`)), "is not a known field")
	}
	return errorf(pointer, "is not valid: %v", err)
}

// Absent reports an empty or null value.
func Absent(raw []byte) bool {
	trimmed := bytes.TrimSpace(raw)
	return len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null"))
}

// exactNames rejects members whose names match a field of type t only
// case-insensitively, which encoding/json would accept ("URL" for "url"),
// in t and in the structs, slices and maps it holds. Values of the wrong
// type are left to the decoder.
func exactNames(raw []byte, pointer string, t reflect.Type) *Error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		var members map[string]json.RawMessage
		if json.Unmarshal(raw, &members) != nil {
			return nil
		}
		fields := map[string]reflect.Type{}
		for f := range t.Fields() {
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
				fields[name] = f.Type
			}
		}
		for _, key := range slices.Sorted(maps.Keys(members)) {
			ft, ok := fields[key]
			if !ok {
				return errorf(pointer+"/"+EscapeName(key), "is not a known field")
			}
			if err := exactNames(members[key], pointer+"/"+EscapeName(key), ft); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if t.Elem().Kind() == reflect.Uint8 || json.Unmarshal(raw, &items) != nil {
			return nil // []byte is a base64 string
		}
		for i, item := range items {
			if err := exactNames(item, pointer+"/"+strconv.Itoa(i), t.Elem()); err != nil {
				return err
			}
		}
	case reflect.Map:
		var members map[string]json.RawMessage
		if json.Unmarshal(raw, &members) != nil {
			return nil
		}
		for _, key := range slices.Sorted(maps.Keys(members)) {
			if err := exactNames(members[key], pointer+"/"+EscapeName(key), t.Elem()); err != nil {
				return err
			}
		}
	}
	return nil
}

// describeType names a Go type the way a JSON client thinks of it.
func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return fmt.Sprintf("of type %s", t)
}

// OrRoot is pointer, or "/" for the document itself ("").
func OrRoot(pointer string) string {
	if pointer == "" {
		return "/"
	}
	return pointer
}

// EscapeName escapes a member name for a JSON pointer (RFC 6901).
func EscapeName(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}
