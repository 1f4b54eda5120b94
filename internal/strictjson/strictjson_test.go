package strictjson_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/strictjson"
)

type inner struct {
	Weight int `json:"weight"`
}

type sample struct {
	URL     string            `json:"url"`
	Count   *int              `json:"count,omitempty"`
	Tags    []string          `json:"tags,omitempty"`
	Inner   inner             `json:"inner"`
	Headers map[string]string `json:"headers,omitempty"`
	Skipped string            `json:"-"`
}

func TestDecode(t *testing.T) {
	t.Parallel()
	var v sample
	require.NoError(t, strictjson.Decode([]byte(`{"url":"https://x.test","count":2,"tags":["a"],"inner":{"weight":3}}`), "/in", &v))
	require.Equal(t, "https://x.test", v.URL)
	require.Equal(t, 2, *v.Count)
	require.Equal(t, 3, v.Inner.Weight)

	for _, raw := range []string{"", "null", "  null "} {
		v := sample{URL: "kept"}
		require.NoError(t, strictjson.Decode([]byte(raw), "/in", &v), "%q", raw)
		require.Equal(t, "kept", v.URL, "absent leaves v alone")
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		raw, pointer     string
		wantPointer, msg string
	}{
		{`[]`, "/in", "/in", "must be an object"},
		{`"x"`, "/in", "/in", "must be an object"},
		{`3`, "", "/", "must be an object"},
		{`{"nope":1}`, "/in", "/in/nope", "is not a known field"},
		{`{"URL":"https://x.test"}`, "/in", "/in/URL", "is not a known field"}, // encoding/json would take it for url
		{`{"a/b~c":1}`, "/in", "/in/a~1b~0c", "is not a known field"},
		{`{"Skipped":"x"}`, "/in", "/in/Skipped", "is not a known field"},
		{`{"url":3}`, "/in", "/in/url", "must be a string"},
		{`{"count":1.5}`, "/in", "/in/count", "must be an integer"},
		{`{"tags":"a"}`, "/in", "/in/tags", "must be an array of strings"},
		{`{"tags":[1]}`, "/in", "/in/tags", "must be a string"},
		{`{"inner":[]}`, "/in", "/in/inner", "must be an object"},
		{`{"inner":{"weight":"3"}}`, "/in", "/in/inner/weight", "must be an integer"},
		{`{"url":"x"`, "/in", "/in", "is not valid: unexpected EOF"},
	}
	for _, tc := range cases {
		var v sample
		err := strictjson.Decode([]byte(tc.raw), tc.pointer, &v)
		var fe *strictjson.Error
		require.True(t, errors.As(err, &fe), "%s: %v", tc.raw, err)
		require.Equal(t, tc.wantPointer, fe.Pointer, tc.raw)
		require.Equal(t, tc.msg, fe.Message, tc.raw)
		require.Equal(t, tc.wantPointer+": "+tc.msg, err.Error())
	}
}

func TestDecodeNestedNamesAndTrailingData(t *testing.T) {
	t.Parallel()
	type item struct {
		Name string `json:"name"`
	}
	type deep struct {
		Inner *inner            `json:"inner"`
		Items []item            `json:"items"`
		ByKey map[string]item   `json:"by_key"`
		Raw   json.RawMessage   `json:"raw"`
		Any   map[string]any    `json:"any"`
		Plain map[string]string `json:"plain"`
	}
	cases := []struct{ raw, wantPointer, msg string }{
		{`{"inner":{"Weight":3}}`, "/in/inner/Weight", "is not a known field"},
		{`{"items":[{"name":"a"},{"NAME":"b"}]}`, "/in/items/1/NAME", "is not a known field"},
		{`{"by_key":{"a/b":{"Name":"x"}}}`, "/in/by_key/a~1b/Name", "is not a known field"},
		{`{"url":"a"} {"url":"b"}`, "/in", "is not valid: data after the object"},
		{`{"url":"a"} x`, "/in", "is not valid: data after the object"},
	}
	for _, tc := range cases {
		var v deep
		if strings.HasPrefix(tc.raw, `{"url"`) {
			err := strictjson.Decode([]byte(tc.raw), "/in", &sample{})
			require.EqualError(t, err, tc.wantPointer+": "+tc.msg, tc.raw)
			continue
		}
		err := strictjson.Decode([]byte(tc.raw), "/in", &v)
		require.EqualError(t, err, tc.wantPointer+": "+tc.msg, tc.raw)
	}
	var v deep
	require.NoError(t, strictjson.Decode([]byte(`{"inner":{"weight":3},"items":[{"name":"a"}],"by_key":{"k":{"name":"b"}},
		"raw":{"Any":1},"any":{"Name":1},"plain":{"Name":"x"}} `), "/in", &v))
	require.Equal(t, 3, v.Inner.Weight)
	require.Equal(t, "b", v.ByKey["k"].Name)
}
