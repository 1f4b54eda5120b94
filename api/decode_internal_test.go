package api

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckUnicode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		body string
		want string // the error message; "" when the body is accepted
	}{
		{`{"a": "größe 🎉", "b": ["\u00e9", "\ud83c\udf89", "\uD83C\uDF89"]}`, ""},
		{`{"a": "\\ud800", "b": "\\\ud83c\udf89", "c": "\"\\udc00"}`, ""}, // escaped backslashes, not escapes
		{`{"a": 1e400, "b": [true, null, {}], "c": "` + "\xff" + `"}`, "/c: is not valid UTF-8"},
		{"\"\xff\"", "/: is not valid UTF-8"},
		{`["ok", ["x", "` + "\xff" + `"]]`, "/1/1: is not valid UTF-8"},
		{`{"a~b/c": {"d": "` + "\xe2\x82" + `"}}`, "/a~0b~1c/d: is not valid UTF-8"},
		{`{"a": {"ok": 1, "k` + "\xff" + `": 2}}`, "/a: has a member name that is not valid UTF-8"},
		{"{\"\xff\": 1}", "/: has a member name that is not valid UTF-8"},
		{`[{"a": 1}, {"b": 2, "c": "\ud800x"}]`, `/1/c: holds an unpaired UTF-16 surrogate escape (\ud800)`},
		{`{"a": {"\uDFFF": 1}}`, `/a: has a member name that holds an unpaired UTF-16 surrogate escape (\uDFFF)`},
		{`{"a": "\ud83c\\udf89"}`, `/a: holds an unpaired UTF-16 surrogate escape (\ud83c)`},
		{`{"a": "\ud83c\ud83c\udf89"}`, `/a: holds an unpaired UTF-16 surrogate escape (\ud83c)`},
		{`{"policy": {"name": "a\u0000b"}}`, `/policy/name: holds a NUL character (\u0000)`},
		{`{"a": "\\u0000"}`, ""}, // an escaped backslash, not NUL
		// The first problem in the body is named.
		{`{"a": "` + "\xff" + `", "b": "\ud800"}`, "/a: is not valid UTF-8"},
		{`{"a": "\ud800", "b": "` + "\xff" + `"}`, `/a: holds an unpaired UTF-16 surrogate escape (\ud800)`},
	}
	for _, tc := range cases {
		err := checkUnicode([]byte(tc.body))
		if tc.want == "" {
			require.Nil(t, err, "%q", tc.body)
			continue
		}
		require.NotNil(t, err, "%q", tc.body)
		require.Equal(t, 422, err.Status)
		require.Equal(t, tc.want, err.Message, "%q", tc.body)
	}
}

func BenchmarkCheckUnicode(b *testing.B) {
	body := []byte(`{"data": {"type": "translation-job", "attributes": {"input": {"type": "text", "target_language": "de", "content": "` +
		strings.Repeat(`größe \"quoted\" \ud83c\udf89 `, 20000) + `"}}}}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := checkUnicode(body); err != nil {
			b.Fatal(err)
		}
	}
}
