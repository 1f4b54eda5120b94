package jobs_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

func members(t *testing.T, raw string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(raw), &m))
	return m
}

// The job model parses a create request's attributes and meta; what it
// refuses is a *RequestError naming the member's pointer in the request.
func TestParseCreateRefusesWithRequestErrors(t *testing.T) {
	t.Parallel()
	const input = `"input": {"type": "text", "text": "hi", "prompt": "Say hi"}`
	req, err := jobs.ParseCreate(jobs.LLMTasks, members(t, `{`+input+`, "provider": "alpha",
		"webhook": {"url": "https://hooks.example.com/cb", "headers": {"X-Token": "t"}}}`), json.RawMessage(`{"client": {"order": 7}}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"text","text":"hi","prompt":"Say hi"}`, string(req.Input))
	require.Equal(t, "alpha", req.Provider)
	require.Equal(t, "https://hooks.example.com/cb", req.Webhook.URL)
	require.Equal(t, `{"order":7}`, string(req.ClientMeta))
	require.NotNil(t, req.Parsed)

	cases := []struct {
		name, attrs, meta, pointer, code string
	}{
		{"input missing", `{}`, ``, "/data/attributes/input", jobs.RequestInvalid},
		{"webhook url with credentials", `{` + input + `, "webhook": {"url": "https://u:p@hooks.example.com"}}`, ``, "/data/attributes/webhook/url", jobs.RequestInvalid},
		{"reserved webhook header", `{` + input + `, "webhook": {"url": "https://hooks.example.com", "headers": {"Host": "x"}}}`, ``, "/data/attributes/webhook/headers/Host", jobs.RequestInvalid},
		{"policy id not a UUID", `{` + input + `, "policy_id": "p1"}`, ``, "/data/attributes/policy_id", jobs.RequestInvalid},
		{"provider not a string", `{` + input + `, "provider": 1}`, ``, "/data/attributes/provider", jobs.RequestInvalid},
		{"unknown meta member", `{` + input + `}`, `{"server": {}}`, "/data/meta/server", jobs.RequestInvalid},
		{"provider and policy", `{` + input + `, "provider": "alpha", "policy_id": "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f"}`, ``, "", jobs.RequestProviderAndPolicy},
	}
	for _, tc := range cases {
		_, err := jobs.ParseCreate(jobs.LLMTasks, members(t, tc.attrs), json.RawMessage(tc.meta))
		var reqErr *jobs.RequestError
		require.True(t, errors.As(err, &reqErr), "%s: %v", tc.name, err)
		require.Equal(t, tc.pointer, reqErr.Pointer, tc.name)
		require.Equal(t, tc.code, reqErr.Code, tc.name)
		require.NotEmpty(t, reqErr.Message, tc.name)
	}
}

// A create request's whole body parses in the job model too, envelope
// and all, so a batch file's reader needs no HTTP package; its refusals
// are *RequestError, down to a wrong data.type or a member named twice.
func TestParseCreateBodyChecksTheEnvelope(t *testing.T) {
	t.Parallel()
	svc, ok := jobs.ServiceOf(jobs.LLMTasks)
	require.True(t, ok)
	const input = `"input": {"type": "text", "text": "hi", "prompt": "Say hi"}`
	req, err := jobs.ParseCreateBody(svc, []byte(`{"data": {"type": "`+svc.JobType+`", "attributes": {`+input+`}, "meta": {"client": {"a": 1}}}}`))
	require.NoError(t, err)
	require.Equal(t, `{"a":1}`, string(req.ClientMeta))

	cases := []struct{ name, body, message string }{
		{"wrong type", `{"data": {"type": "translation-job", "attributes": {` + input + `}}}`,
			`/data/type: must be "` + svc.JobType + `" for /v1/llm-tasks, not "translation-job"`},
		{"no attributes", `{"data": {"type": "` + svc.JobType + `"}}`, "/data/attributes: is required"},
		{"unknown data member", `{"data": {"type": "` + svc.JobType + `", "id": "x", "attributes": {` + input + `}}}`,
			"/data/id: is not a known field (known: type, attributes, meta)"},
		{"member twice", `{"data": {"type": "` + svc.JobType + `", "attributes": {` + input + `, "provider": "a", "provider": "b"}}}`,
			`/data/attributes: has the member "provider" more than once`},
		{"NUL", `{"data": {"type": "` + svc.JobType + `", "attributes": {"input": {"type": "text", "text": "a\u0000", "prompt": "p"}}}}`,
			`/data/attributes/input/text: holds a NUL character (\u0000)`},
	}
	for _, tc := range cases {
		_, err := jobs.ParseCreateBody(svc, []byte(tc.body))
		var reqErr *jobs.RequestError
		require.True(t, errors.As(err, &reqErr), "%s: %v", tc.name, err)
		require.Equal(t, jobs.RequestInvalid, reqErr.Code, tc.name)
		require.Equal(t, tc.message, reqErr.Error(), tc.name)
	}
}
