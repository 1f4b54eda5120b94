package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/providers/providertest"
)

// TestPreferWaitEndToEnd: dev's API waits on Prefer: wait for jobs its
// worker runs (docs/api.md, Waiting for a job).
func TestPreferWaitEndToEnd(t *testing.T) {
	t.Parallel()
	g := newGateway(t, "", "--providers", writeCatalog(t, providertest.SandboxCatalog("sandbox-2s", 2000)))
	send := func(method, path, prefer string, want int) jobDoc {
		t.Helper()
		status, body, header := g.do(method, path, llmTaskBody, "Prefer", prefer)
		require.Equal(t, want, status, "%s %s: %s", method, path, body)
		require.Equal(t, prefer, header.Get("Preference-Applied"))
		var doc jobDoc
		require.NoError(t, json.Unmarshal(body, &doc))
		return doc
	}

	start := time.Now()
	created := send(http.MethodPost, "/v1/llm-tasks", "wait=1", http.StatusAccepted)
	require.GreaterOrEqual(t, time.Since(start), time.Second)
	require.False(t, terminal(created), "the provider takes 2 s")
	done := send(http.MethodGet, "/v1/llm-tasks/"+created.Data.ID, "wait=30", http.StatusOK)
	require.Equal(t, "completed", done.Data.Attributes.Status)

	done = send(http.MethodPost, "/v1/llm-tasks", "wait=30", http.StatusOK)
	require.Equal(t, "completed", done.Data.Attributes.Status)
	require.NotEmpty(t, done.Data.Attributes.Result)
}
