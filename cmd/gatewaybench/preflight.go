package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	apiclient "github.com/ai-job-gateway/gateway/api/client"
)

// preflight runs one job of the load phases (jobBody) through the typed
// client generated from the OpenAPI document (api/client; docs/api.md, Go
// client): create, GET until completed, then its result. It runs before
// anything is measured. The measured requests keep their prebuilt body
// (submit): the client's encoding and decoding would add its own time to
// the gateway's numbers.
func (s *gatewaySystem) preflight(ctx context.Context) error {
	c, err := apiclient.NewClientWithResponses(s.base, apiclient.WithHTTPClient(s.hc),
		apiclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+s.token)
			return nil
		}))
	if err != nil {
		return err
	}
	var body apiclient.CreateLLMTaskJSONRequestBody
	if err := json.Unmarshal([]byte(jobBody), &body); err != nil {
		return fmt.Errorf("preflight: the load phases' job body: %w", err)
	}
	created, err := c.CreateLLMTaskWithResponse(ctx, nil, body)
	if err != nil {
		return fmt.Errorf("preflight: POST /v1/llm-tasks: %w", err)
	}
	if created.JSON202 == nil {
		return fmt.Errorf("preflight: POST /v1/llm-tasks: %d %s", created.StatusCode(), truncate(created.Body))
	}
	id := created.JSON202.Data.Id
	for deadline := time.Now().Add(time.Minute); ; {
		got, err := c.GetLLMTaskWithResponse(ctx, id, nil)
		if err != nil {
			return fmt.Errorf("preflight: GET /v1/llm-tasks/%s: %w", id, err)
		}
		if got.JSON200 == nil {
			return fmt.Errorf("preflight: GET /v1/llm-tasks/%s: %d %s", id, got.StatusCode(), truncate(got.Body))
		}
		attrs := got.JSON200.Data.Attributes
		if attrs.Status == apiclient.JobStatusCompleted {
			break
		}
		if attrs.Status == apiclient.JobStatusFailed {
			return fmt.Errorf("preflight: job %s failed: %+v", id, attrs.Error)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("preflight: job %s still %s after a minute", id, attrs.Status)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	result, err := c.GetLLMTaskResultWithResponse(ctx, id, nil)
	if err != nil {
		return fmt.Errorf("preflight: GET /v1/llm-tasks/%s/result: %w", id, err)
	}
	if result.JSON200 == nil || result.JSON200.Content == "" {
		return fmt.Errorf("preflight: GET /v1/llm-tasks/%s/result: %d %s", id, result.StatusCode(), truncate(result.Body))
	}
	return nil
}
