package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// answeringAdapter answers every llm-task with content.
type answeringAdapter struct{ content string }

func (a answeringAdapter) Services() []jobs.ServiceID { return jobs.ServiceIDs() }

func (a answeringAdapter) Run(context.Context, providers.Call) (json.RawMessage, error) {
	return json.Marshal(jobs.LLMTaskResult{Content: a.content, FinishReason: "completed"})
}

const schemaOptions = `{"response_format":{"type":"json_schema","json_schema":{"name":"city","schema":{
	"type":"object","required":["name","population"],
	"properties":{"name":{"type":"string"},"population":{"type":"integer","minimum":0}}}}}}`

// A provider whose answer does not match the job's schema fails the call
// as OUTPUT_INVALID, not retried on it; routing then moves on to the next
// provider, whose matching answer completes the call.
func TestInvalidOutputFailsOverToTheNextProvider(t *testing.T) {
	t.Parallel()
	catalog := `providers:
  - id: invalid
    name: Invalid
    adapter: invalid
    services:
      llm-tasks:
        models: [m1]
        json_schema_models: [m1]
        pricing: {unit: per_token, amount: 0.000001, currency: USD}
  - id: valid
    name: Valid
    adapter: valid
    services:
      llm-tasks:
        models: [m1]
        json_schema_models: [m1]
        pricing: {unit: per_token, amount: 0.000002, currency: USD}
`
	registry := registryOf(t, catalog, map[string]providers.Factory{
		"invalid": answeredBy(answeringAdapter{content: `{"name":"Oslo","population":"many"}`}),
		"valid":   answeredBy(answeringAdapter{content: `{"name":"Oslo","population":709000}`}),
	})
	set := activities.New(activities.Deps{Store: &recordingStore{}, Providers: registry, WorkerID: "worker-7"})
	env := activityEnv(set)

	input := json.RawMessage(`{"type":"messages","messages":[{"role":"user","content":"A city, as JSON"}]}`)
	route := activities.RouteInput{JobID: "job-1", Service: jobs.LLMTasks, Input: input, Options: json.RawMessage(schemaOptions), Attempt: 1}
	first := decide(t, env, route)
	require.Equal(t, "invalid", first.Routing.ProviderID, "the cheaper provider first")

	in := activities.CallInput{JobID: "job-1", Service: jobs.LLMTasks, ProviderID: "invalid", Input: input, Options: json.RawMessage(schemaOptions)}
	_, err := env.ExecuteActivity(acts.Calls.CallProvider, in)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, activities.ErrTypeOutputInvalid, appErr.Type())
	require.True(t, appErr.NonRetryable(), "the same provider is not asked again")
	var jobErr jobs.Error
	require.NoError(t, appErr.Details(&jobErr))
	require.Equal(t, jobs.CodeOutputInvalid, jobErr.Code)
	require.Contains(t, jobErr.Message, "provider invalid")
	require.Contains(t, jobErr.Message, "population")

	route.Failed, route.Attempt = []string{"invalid"}, 2
	second := decide(t, env, route)
	require.Nil(t, second.Error)
	require.Equal(t, "valid", second.Routing.ProviderID)
	require.Equal(t, jobs.ReasonFailover, second.Routing.Reason)

	in.ProviderID = "valid"
	value, err := env.ExecuteActivity(acts.Calls.CallProvider, in)
	require.NoError(t, err)
	var out activities.CallOutput
	require.NoError(t, value.Get(&out))
	var result jobs.LLMTaskResult
	require.NoError(t, json.Unmarshal(out.Result, &result))
	require.JSONEq(t, `{"name":"Oslo","population":709000}`, result.Content)
}

// The check follows response_format: text takes any answer, json_object
// an object only; a job without response_format is not checked.
func TestOutputCheckFollowsResponseFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, options, content string
		invalid                bool
	}{
		{"no options", ``, `not JSON`, false},
		{"no response_format", `{"max_tokens":10}`, `not JSON`, false},
		{"text", `{"response_format":{"type":"text"}}`, `not JSON`, false},
		{"json_object, an object", `{"response_format":{"type":"json_object"}}`, `{"a":1}`, false},
		{"json_object, an array", `{"response_format":{"type":"json_object"}}`, `[1]`, true},
		{"json_object, not JSON", `{"response_format":{"type":"json_object"}}`, "```json\n{}```", true},
		{"json_schema, not JSON", schemaOptions, `Oslo`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			registry := registryOf(t, llmCatalog("scripted", "Scripted", "scripted", ""),
				map[string]providers.Factory{"scripted": answeredBy(answeringAdapter{content: tc.content})})
			env := activityEnv(activities.New(activities.Deps{Store: &recordingStore{}, Providers: registry}))
			in := call()
			in.Options = json.RawMessage(tc.options)
			_, err := env.ExecuteActivity(acts.Calls.CallProvider, in)
			if !tc.invalid {
				require.NoError(t, err)
				return
			}
			var appErr *temporal.ApplicationError
			require.True(t, errors.As(err, &appErr), "%v", err)
			require.Equal(t, activities.ErrTypeOutputInvalid, appErr.Type())
		})
	}
}

// activityEnv is a test activity environment set registers.
func activityEnv(set *activities.Set) *testsuite.TestActivityEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	set.Register(env)
	return env
}

func decide(t *testing.T, env *testsuite.TestActivityEnvironment, in activities.RouteInput) activities.RouteOutput {
	t.Helper()
	value, err := env.ExecuteActivity(acts.Routing.DecideRoute, in)
	require.NoError(t, err)
	var out activities.RouteOutput
	require.NoError(t, value.Get(&out))
	return out
}
