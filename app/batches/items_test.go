package batches_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/app/batches"
	"github.com/ai-job-gateway/gateway/app/jobops"
)

// An item is parsed and its refusal listed without the HTTP package, with
// the status, code and message a single create of it would be answered
// with (docs/api.md, Batches), so the workers' file reader lists them as
// the API lists an inline batch's.
func TestRefusalsAreThoseOfASingleCreate(t *testing.T) {
	t.Parallel()
	writeAll := func(string) bool { return true }
	const llm = `{"type": "llm-task-job", "attributes": {"input": {"type": "text", "text": "hi", "prompt": "Say hi"}}}`
	var raw []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(`[`+llm+`, `+llm+`, {"type": "fax-job", "attributes": {}},
		{"type": "llm-task-job", "attributes": {"input": {"type": "text", "text": "hi", "prompt": "p"}, "policy_id": "p1"}}]`), &raw))
	req, err := batches.ParseItem(writeAll, raw[0])
	require.NoError(t, err)
	require.Equal(t, "llm-tasks", string(req.Service.ID))
	require.JSONEq(t, `{"data": `+llm+`}`, string(req.Body))

	items := make([]jobops.BatchItem, 5)
	for i, members := range raw[1:] {
		mayWrite := writeAll
		if i == 0 {
			mayWrite = func(string) bool { return false }
		}
		items[i].CustomID = string(rune('a' + i))
		items[i].Request, items[i].Err = batches.ParseItem(mayWrite, members)
	}
	items[3].CustomID, items[3].Err = "d", &jobops.Error{Kind: jobops.ErrUnknownProvider, Pointer: "/provider", Message: "no provider named x"}
	errs := []error{items[0].Err, items[1].Err, items[2].Err, items[3].Err, nil}
	refused, err := batches.Refusals(items, errs)
	require.NoError(t, err)
	require.Len(t, refused, 4)
	require.Equal(t, batches.Refusal{Index: 0, CustomID: "a", Status: 403,
		Error: batches.Error{Code: "INSUFFICIENT_SCOPE", Message: `the token lacks the scope "llm-tasks:write"`}}, refused[0])
	require.Equal(t, 422, refused[1].Status)
	require.Equal(t, "VALIDATION_ERROR", refused[1].Error.Code)
	require.Contains(t, refused[1].Error.Message, "/data/type: must be the type of a job: ")
	require.Equal(t, batches.Error{Code: "VALIDATION_ERROR", Message: "/data/attributes/policy_id: must be a UUID"}, refused[2].Error)
	require.Equal(t, batches.Refusal{Index: 3, CustomID: "d", Status: 422,
		Error: batches.Error{Code: "UNKNOWN_PROVIDER", Message: "/data/attributes/provider: no provider named x"}}, refused[3])

	storeDown := errors.New("the database went away")
	_, err = batches.Refusals(items[:1], []error{storeDown})
	require.ErrorIs(t, err, storeDown)
}
