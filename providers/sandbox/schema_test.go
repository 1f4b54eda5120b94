package sandbox

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// schemaFormat is a json_schema response_format of schema.
func schemaFormat(schema string) *jobs.LLMResponseFormat {
	return &jobs.LLMResponseFormat{Type: "json_schema", JSONSchema: &jobs.LLMJSONSchema{Name: "s", Schema: json.RawMessage(schema)}}
}

func TestSchemaInstanceMatchesItsSchema(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, schema, want string }{
		{"object with required", `{"type":"object","additionalProperties":false,
			"required":["name","age","tags","ok","none"],
			"properties":{"name":{"type":"string","minLength":3},"age":{"type":"integer","minimum":18},
				"tags":{"type":"array","minItems":2,"items":{"enum":["a","b"]}},"ok":{"type":"boolean"},
				"none":{"type":"null"},"optional":{"type":"string","minLength":1}}}`,
			`{"age":18,"name":"xxx","none":null,"ok":false,"tags":["a","a"]}`},
		{"const and enum", `{"type":"object","required":["kind","level"],"properties":{"kind":{"const":"city"},"level":{"enum":[3,4]}}}`,
			`{"kind":"city","level":3}`},
		{"nested", `{"type":"object","required":["city"],"properties":{"city":{"type":"object","required":["population"],
			"properties":{"population":{"type":"number","exclusiveMinimum":0.5}}}}}`,
			`{"city":{"population":1.5}}`},
		{"integer bounds", `{"type":"array","prefixItems":[{"type":"integer","minimum":2.5},{"type":"integer","exclusiveMinimum":7},{"type":"integer","maximum":-3}],"minItems":3}`,
			`[3,8,-3]`},
		{"type list", `{"type":["string","null"],"minLength":2}`, `"xx"`},
		{"anyOf", `{"anyOf":[{"type":"object","required":["a"],"properties":{"a":{"type":"boolean"}}},{"type":"string"}]}`, `{"a":false}`},
		{"no type, implied", `{"properties":{"a":{"type":"string"}},"required":["a"]}`, `{"a":""}`},
		{"unknown keywords", `{"not":{"type":"string"}}`, `null`},
		{"empty array", `{"type":"array","items":{"type":"string"}}`, `[]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			format := schemaFormat(tc.schema)
			answer := formatted("text", format)
			require.JSONEq(t, tc.want, answer)
			require.NoError(t, format.CheckOutput(answer))
		})
	}
}

// A schema keyword the generator does not read leaves an instance the
// check refuses: the sandbox does not pretend to more.
func TestSchemaInstanceIgnoresUnknownKeywords(t *testing.T) {
	t.Parallel()
	format := schemaFormat(`{"type":"string","pattern":"^[0-9]+$"}`)
	err := format.CheckOutput(formatted("text", format))
	require.True(t, errors.Is(err, jobs.ErrOutputInvalid), "%v", err)
}

func TestLLMTaskMessagesAndResponseFormat(t *testing.T) {
	t.Parallel()
	messages := `{"type":"messages","messages":[{"role":"system","content":"Be brief."},
		{"role":"user","content":"First question"},{"role":"assistant","content":"An answer"},{"role":"user","content":"Name a city"}]}`
	schema := `{"type":"object","required":["city"],"properties":{"city":{"type":"string","minLength":1}}}`
	for _, tc := range []struct {
		name, options string
		check         func(t *testing.T, content string)
	}{
		{"text", ``, func(t *testing.T, content string) {
			require.Contains(t, content, `"Name a city"`, "the last user message")
			require.Contains(t, content, "over 43 characters of input")
		}},
		{"json_object", `{"response_format":{"type":"json_object"}}`, func(t *testing.T, content string) {
			var object map[string]string
			require.NoError(t, json.Unmarshal([]byte(content), &object))
			require.Contains(t, object["answer"], `"Name a city"`)
			require.NoError(t, (&jobs.LLMResponseFormat{Type: "json_object"}).CheckOutput(content))
		}},
		{"json_schema", `{"response_format":{"type":"json_schema","json_schema":{"name":"c","schema":` + schema + `}}}`, func(t *testing.T, content string) {
			require.JSONEq(t, `{"city":"x"}`, content)
			require.NoError(t, schemaFormat(schema).CheckOutput(content))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			res, err := b.run(t, jobs.LLMTasks, messages, tc.options, 0)
			require.NoError(t, err)
			require.Equal(t, "completed", res["finish_reason"])
			u := res["usage"].(map[string]any)
			require.Equal(t, 11.0, u["input_tokens"], "the conversation's 43 characters, four a token")
			tc.check(t, res["content"].(string))
		})
	}
}

// A schema asking for a huge instance gets a bounded one, which the
// output check refuses, rather than the worker's memory.
func TestSchemaInstanceIsBounded(t *testing.T) {
	t.Parallel()
	for _, schema := range []string{
		`{"type":"string","minLength":1e10}`,
		`{"type":"array","minItems":1000,"items":{"type":"array","minItems":1000,"items":{"type":"array","minItems":1000}}}`,
	} {
		var s any
		require.NoError(t, json.Unmarshal([]byte(schema), &s))
		out, err := json.Marshal(schemaInstance(s))
		require.NoError(t, err)
		require.Less(t, len(out), 200_000, schema)
	}
}
