package jobs_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

func TestLLMMessagesTask(t *testing.T) {
	t.Parallel()
	req := parse(t, jobs.LLMTasks, `{"type":"messages","messages":[{"role":"system","content":"Be brief."},
		{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello."},{"role":"user","content":"Name a colour."}]}`,
		`{"max_tokens":50,"temperature":0.2,"stop":["\n\n"],"response_format":{"type":"json_schema","json_schema":{"name":"colour",
		"schema":{"type":"object","properties":{"colour":{"type":"string"}},"required":["colour"],"additionalProperties":false}}}}`)
	task := req.(*jobs.LLMTask)
	require.Len(t, task.Input.Messages, 4)
	require.Equal(t, 50, *task.Options.MaxTokens)
	require.Equal(t, jobs.Requirements{Service: jobs.LLMTasks, JSONSchema: true}, req.Requirements())

	input, err := json.Marshal(task.Input)
	require.NoError(t, err)
	usage, known := jobs.EstimateUsage(jobs.LLMTasks, input, nil, nil)
	require.True(t, known)
	require.EqualValues(t, (len("Be brief.Hi")+len("Hello.Name a colour.")+3)/4, *usage.InputTokens, "the messages at four characters a token")
}

func TestLLMResponseFormatChecksTheOutput(t *testing.T) {
	t.Parallel()
	schema := &jobs.LLMResponseFormat{Type: "json_schema", JSONSchema: &jobs.LLMJSONSchema{Name: "colour",
		Schema: json.RawMessage(`{"type":"object","properties":{"colour":{"enum":["red","green"]}},"required":["colour"]}`)}}
	require.NoError(t, schema.CheckOutput(`{"colour":"red"}`))
	for _, bad := range []string{`{"colour":"blue"}`, `{}`, `["red"]`, `red`, `{"colour":"red"`} {
		err := schema.CheckOutput(bad)
		require.True(t, errors.Is(err, jobs.ErrOutputInvalid), "%s: %v", bad, err)
		require.NotContains(t, err.Error(), "\n")
	}
	object := &jobs.LLMResponseFormat{Type: "json_object"}
	require.NoError(t, object.CheckOutput(`{"a":1}`))
	require.ErrorIs(t, object.CheckOutput(`[1]`), jobs.ErrOutputInvalid)
	require.ErrorIs(t, object.CheckOutput(`not json`), jobs.ErrOutputInvalid)
	var text *jobs.LLMResponseFormat
	require.NoError(t, text.CheckOutput("anything"))
	require.NoError(t, (&jobs.LLMResponseFormat{Type: "text"}).CheckOutput("anything"))
}

func TestLLMResponseFormatSchemasStayInside(t *testing.T) {
	t.Parallel()
	for schema, want := range map[string]string{
		`{"type":"nonsense"}`:                                                                   "is not a JSON schema (draft 2020-12) the gateway can check",
		`{"$ref":"https://example.test/s.json"}`:                                                "it uses $ref: inline the definitions it refers to",
		`{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"}]}}}`:                                      "it uses $ref",
		`{"$schema":"https://example.test/meta.json"}`:                                          "may not refer to https://example.test/meta.json",
		`{"$schema":"file:///etc/passwd"}`:                                                      "may not refer to file:///etc/passwd",
		strings.Repeat(`{"items":`, 40) + `{}` + strings.Repeat(`}`, 40):                        "it nests deeper than 32 levels",
		`{"anyOf":[` + strings.TrimSuffix(strings.Repeat(`{"type":"string"},`, 25), ",") + `]}`: "more than 24 alternatives",
		`"a string"`: "a schema is a JSON object",
	} {
		_, err := spec(t, jobs.LLMTasks).Parse(json.RawMessage(`{"type":"messages","messages":[{"role":"user","content":"hi"}]}`),
			json.RawMessage(`{"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":`+schema+`}}}`))
		var fe *jobs.FieldError
		require.ErrorAs(t, err, &fe, schema)
		require.Equal(t, "/options/response_format/json_schema/schema", fe.Pointer)
		require.Contains(t, fe.Message, want)
	}
}
