package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	apiclient "github.com/ai-job-gateway/gateway/api/client"
)

// TestGoClientEndToEnd drives `gateway dev` through the typed client
// generated from the OpenAPI document (api/client; docs/api.md, Go
// client): it creates a translation, polls it to completion and reads its
// result.
func TestGoClientEndToEnd(t *testing.T) {
	t.Parallel()
	g := newGateway(t, "")
	bearer := func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+g.token)
		return nil
	}
	c, err := apiclient.NewClientWithResponses(g.url(""), apiclient.WithRequestEditorFn(bearer))
	require.NoError(t, err)
	ctx := t.Context()

	var body apiclient.CreateTranslationJSONRequestBody
	body.Data.Type = apiclient.CreateTranslationDataTypeTranslationJob
	body.Data.Attributes.Input = apiclient.TranslationInput{
		Type:           apiclient.TranslationInputTypeText,
		Content:        new("Hello world"),
		TargetLanguage: "de",
	}
	body.Data.Meta = &apiclient.CreateJobMeta{Client: &map[string]any{"ref": "go-client"}}
	created, err := c.CreateTranslationWithResponse(ctx, nil, body)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, created.StatusCode(), "%s", created.Body)
	require.NotNil(t, created.JSON202)
	id := created.JSON202.Data.Id
	require.Equal(t, apiclient.JobStatusPending, created.JSON202.Data.Attributes.Status)

	var job *apiclient.JobDocument
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got, err := c.GetTranslationWithResponse(ctx, id, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, got.StatusCode(), "%s", got.Body)
		job = got.JSON200
		if s := job.Data.Attributes.Status; s == apiclient.JobStatusCompleted || s == apiclient.JobStatusFailed {
			break
		}
		require.True(t, time.Now().Before(deadline), "translation %s still %s", id, job.Data.Attributes.Status)
	}
	attrs := job.Data.Attributes
	require.Equal(t, apiclient.JobStatusCompleted, attrs.Status, "%+v", attrs.Error)
	require.NotNil(t, attrs.Provider)
	require.NotNil(t, attrs.CompletedAt)
	require.Equal(t, "go-client", (*job.Data.Meta.Client)["ref"])

	// A text translation's result is text/plain unless Accept asks for
	// JSON (api/openapi.yaml, getTranslationResult).
	acceptJSON := func(_ context.Context, req *http.Request) error {
		req.Header.Set("Accept", "application/json")
		return nil
	}
	result, err := c.GetTranslationResultWithResponse(ctx, id, nil, acceptJSON)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, result.StatusCode(), "%s", result.Body)
	require.NotNil(t, result.JSON200, "%s", result.Body)
	require.Equal(t, "de", result.JSON200.TargetLanguage)
	require.NotEmpty(t, result.JSON200.Content)
	require.Positive(t, result.JSON200.CharacterCount)
}
