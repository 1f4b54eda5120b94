// Package strictjson decodes JSON objects strictly: unknown members, names
// that match a field only case-insensitively and values of the wrong type
// are errors naming the offending member's JSON pointer.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
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
	return &Error{Pointer: pointerOrRoot(pointer), Message: fmt.Sprintf(format, args...)}
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
	if err := exactNames(raw, pointer, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
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
		return errorf(pointer+"/"+escapePointer(strings.Trim(name, `"`)), "is not a known field")
	}
	return errorf(pointer, "is not valid: %v", err)
}

// Absent reports an empty or null value.
func Absent(raw []byte) bool {
	trimmed := bytes.TrimSpace(raw)
	return len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null"))
}

// exactNames rejects members whose names match a field of struct v only
// case-insensitively, which encoding/json would accept ("URL" for "url").
func exactNames(raw []byte, pointer string, v any) *Error {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var members map[string]json.RawMessage
	if t.Kind() != reflect.Struct || json.Unmarshal(raw, &members) != nil {
		return nil
	}
	known := map[string]bool{}
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			known[name] = true
		}
	}
	for key := range members {
		if !known[key] {
			return errorf(pointer+"/"+escapePointer(key), "is not a known field")
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

func pointerOrRoot(pointer string) string {
	if pointer == "" {
		return "/"
	}
	return pointer
}

// escapePointer escapes a member name for a JSON pointer (RFC 6901).
func escapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}
