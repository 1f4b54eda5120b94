package strictjson

import (
	"encoding/json"
	"slices"
	"strings"
)

// Object decodes a JSON object into its members, so each can be checked
// and reported under its own JSON pointer. A null or absent value gives a
// nil map; a value that is no object an *Error.
func Object(raw json.RawMessage, pointer string) (map[string]json.RawMessage, error) {
	if Absent(raw) {
		return nil, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, errorf(pointer, "must be an object")
	}
	if members == nil {
		members = map[string]json.RawMessage{}
	}
	return members, nil
}

// OnlyKeys refuses, with an *Error, members other than the allowed ones.
func OnlyKeys(members map[string]json.RawMessage, pointer string, allowed ...string) error {
	for key := range members {
		if !slices.Contains(allowed, key) {
			return errorf(pointer+"/"+EscapeName(key), "is not a known field (known: %s)", strings.Join(allowed, ", "))
		}
	}
	return nil
}

// String decodes an optional string member; null counts as absent. A
// value that is no string is an *Error.
func String(members map[string]json.RawMessage, key, pointer string) (string, bool, error) {
	raw, ok := members[key]
	if !ok || Absent(raw) {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, errorf(pointer+"/"+key, "must be a string")
	}
	return s, true, nil
}
