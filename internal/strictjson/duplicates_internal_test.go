package strictjson

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestDuplicateMember(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body, pointer, name string
	}{
		{`{"a": 1, "b": {"c": [1, "x", {"d": 2}]}, "e": "a"}`, "", ""},
		{`{"a": 1, "a": 2}`, "/", "a"},
		{`{"data": {"attributes": {"options": {"creativity": "x", "creativity": "precise"}}}}`, "/data/attributes/options", "creativity"},
		{`{"a": [1, true, null, "s", {"k": 1, "k": 2}]}`, "/a/4", "k"},
		{`{"a": [[], {}, [{"x": 1}, {"y": 1, "y": 2}]]}`, "/a/2/1", "y"},
		{`{"a\u0062": 1, "ab": 2}`, "/", "ab"},               // the same name, escaped
		{`{"x~/y": {"q": 1, "q": 1}}`, "/x~0~1y", "q"},       // the pointer is escaped
		{`{"s": "{\"a\": 1, \"a\": 2}", "t": "\\"}`, "", ""}, // inside strings, nothing counts
		{`{"a": {"b": 1}, "c": {"b": 1}}`, "", ""},           // same name, other objects
		{`[{"a": 1}, {"a": 1}]`, "", ""},                     // same name, other objects
		{`{"a": {"z": 1, "z": 1}, "a": 2}`, "/a", "z"},       // the first found
	} {
		pointer, name, found := duplicateMember([]byte(tc.body))
		require.Equal(t, tc.name != "", found, tc.body)
		if found {
			require.Equal(t, tc.name, name, tc.body)
			require.Equal(t, tc.pointer, pointerOrEmptyRoot(pointer), tc.body)
		}
	}
}

// pointerOrEmptyRoot shows the root as "/" to compare with the cases.
func pointerOrEmptyRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func BenchmarkDuplicateMember(b *testing.B) {
	body := []byte(`{"data": {"type": "translation-job", "attributes": {"input": {"type": "text", "content": "` +
		strings.Repeat("word ", 100_000) + `", "target_language": "de"}, "options": {"priority": "high"}}}}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		duplicateMember(body)
	}
}

// FuzzDuplicateMember checks the scanner against a decoder's walk of the
// same body: the same verdict, and the same name.
func FuzzDuplicateMember(f *testing.F) {
	for _, seed := range []string{`{"a": 1, "a": 2}`, `[{"a": [1, {"b": 1, "b\u0000": 2}]}]`, `{"s": "\"a\": 1"}`, `"x"`, `{"a\\b": {}, "a\\b": 1}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		// Bodies reach the scanner valid and as UTF-8 (CheckUnicode).
		if !json.Valid(body) || !utf8.Valid(body) {
			return
		}
		_, name, found := duplicateMember(body)
		wantName, wantFound := firstDuplicateByDecoder(t, body)
		if found != wantFound || name != wantName {
			t.Fatalf("%q: scanner says %v %q, the decoder %v %q", body, found, name, wantFound, wantName)
		}
	})
}

// firstDuplicateByDecoder walks body's tokens with encoding/json.
func firstDuplicateByDecoder(t *testing.T, body []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // a valid number too large for a float64 (1E700) is still a token
	type frame struct {
		object   bool
		names    map[string]bool
		wantName bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return "", false
		}
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top != nil && top.object {
					top.wantName = true
				}
				stack = append(stack, &frame{object: v == '{', names: map[string]bool{}, wantName: v == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.object && top.wantName {
				if top.names[v] {
					return v, true
				}
				top.names[v], top.wantName = true, false
				continue
			}
		}
		if top != nil && top.object {
			top.wantName = true
		}
	}
}
