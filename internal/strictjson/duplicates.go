package strictjson

import (
	"encoding/json"
	"strconv"
)

// CheckDuplicateMembers rejects a body (already valid JSON) with an object
// that names a member twice. Decoding keeps the last value while input,
// options and meta.client are stored as sent, so the gateway and its
// providers would read different jobs. The *Error names the object.
func CheckDuplicateMembers(body []byte) error {
	pointer, name, found := duplicateMember(body)
	if !found {
		return nil
	}
	return errorf(pointer, "has the member %q more than once", name)
}

// jsonFrame is an object or array being scanned.
type jsonFrame struct {
	pointer string
	object  bool
	names   map[string]bool // the object's member names so far
	name    string          // the object's current member name
	index   int             // the array's current element
}

// duplicateMember scans valid JSON for the first object holding a member
// name twice (names compared as decoded, so "a" and "\u0061" are one).
// Strings and scalars are skipped byte by byte; only member names are
// kept.
func duplicateMember(b []byte) (pointer, name string, found bool) {
	var stack []*jsonFrame
	expectName := false // the next string is a member name
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '{', '[':
			p := ""
			if len(stack) > 0 {
				top := stack[len(stack)-1]
				if top.object {
					p = top.pointer + "/" + EscapeName(top.name)
				} else {
					p = top.pointer + "/" + strconv.Itoa(top.index)
				}
			}
			stack = append(stack, &jsonFrame{pointer: p, object: c == '{'})
			expectName = c == '{'
		case '}', ']':
			stack = stack[:len(stack)-1]
			expectName = false
		case ',':
			top := stack[len(stack)-1]
			top.index++
			expectName = top.object
		case '"':
			end, escaped := i+1, false
			for ; b[end] != '"'; end++ {
				if b[end] == '\\' {
					escaped = true
					end++
				}
			}
			if expectName {
				top := stack[len(stack)-1]
				key := string(b[i+1 : end])
				if escaped {
					_ = json.Unmarshal(b[i:end+1], &key)
				}
				if top.names[key] {
					return top.pointer, key, true
				}
				if top.names == nil {
					top.names = map[string]bool{}
				}
				top.names[key], top.name, expectName = true, key, false
			}
			i = end
		}
	}
	return "", "", false
}
