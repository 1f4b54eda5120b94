package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/ai-job-gateway/gateway/api/apierror"
)

// object decodes a JSON object into its members, so each can be checked
// and reported under its own JSON pointer. A null or absent value gives a
// nil map.
func object(raw json.RawMessage, pointer string) (map[string]json.RawMessage, *apierror.Error) {
	if isAbsent(raw) {
		return nil, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, apierror.Validation(pointerOrRoot(pointer), "must be an object")
	}
	if members == nil {
		members = map[string]json.RawMessage{}
	}
	return members, nil
}

// onlyKeys rejects members other than the allowed ones.
func onlyKeys(members map[string]json.RawMessage, pointer string, allowed ...string) *apierror.Error {
	for key := range members {
		if !contains(allowed, key) {
			return apierror.Validation(pointer+"/"+escapePointer(key), "is not a known field (known: %s)", strings.Join(allowed, ", "))
		}
	}
	return nil
}

// decodeStrict decodes a JSON object into v, rejecting unknown fields and
// values of the wrong type with the offending field's pointer.
func decodeStrict(raw json.RawMessage, pointer string, v any) *apierror.Error {
	if isAbsent(raw) {
		return nil
	}
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return apierror.Validation(pointerOrRoot(pointer), "must be an object")
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
		return apierror.Validation(pointerOrRoot(field), "must be %s", describeType(typeErr.Type))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return apierror.Validation(pointer+"/"+escapePointer(strings.Trim(name, `"`)), "is not a known field")
	}
	return apierror.Validation(pointerOrRoot(pointer), "is not valid: %v", err)
}

// exactNames rejects members whose names match a field of struct v only
// case-insensitively, which encoding/json would accept ("URL" for "url").
func exactNames(raw json.RawMessage, pointer string, v any) *apierror.Error {
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
			return apierror.Validation(pointer+"/"+escapePointer(key), "is not a known field")
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

// stringMember decodes an optional string member; null counts as absent.
func stringMember(members map[string]json.RawMessage, key, pointer string) (string, bool, *apierror.Error) {
	raw, ok := members[key]
	if !ok || isAbsent(raw) {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, apierror.Validation(pointer+"/"+key, "must be a string")
	}
	return s, true, nil
}

func isAbsent(raw json.RawMessage) bool {
	trimmed := bytes.TrimSpace(raw)
	return len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null"))
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

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// dataMember checks a request body down to its data object: valid JSON
// (else 400), an object with a data object holding only the allowed
// members. Unknown members at the top level are ignored.
func dataMember(body []byte, allowed ...string) (map[string]json.RawMessage, *apierror.Error) {
	if !json.Valid(body) {
		return nil, apierror.New(http.StatusBadRequest, apierror.CodeMalformedJSON, "the request body is not valid JSON")
	}
	root, err := object(body, "")
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, apierror.Validation("/", "must be an object with a data member")
	}
	data, err := object(root["data"], ptrData)
	if err != nil {
		return nil, err
	}
	if data == nil {
		return nil, apierror.Validation(ptrData, "is required")
	}
	if err := onlyKeys(data, ptrData, allowed...); err != nil {
		return nil, err
	}
	return data, nil
}
