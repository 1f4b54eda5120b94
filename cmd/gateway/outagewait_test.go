package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeChatVendor is an OpenAI-compatible server that answers 503 while
// down, and a chat completion otherwise.
type fakeChatVendor struct {
	*httptest.Server
	down  atomic.Bool
	calls atomic.Int64
}

func newFakeChatVendor(t *testing.T) *fakeChatVendor {
	t.Helper()
	v := &fakeChatVendor{}
	v.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		v.calls.Add(1)
		if v.down.Load() {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id":      "chatcmpl-1",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "ok"}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
		})
	}))
	t.Cleanup(v.Close)
	return v
}

// TestJobsWaitOutAnOutage: the only llm provider goes down. A running job
// fails on it until its breaker opens, then waits (attributes.waiting); a
// job created meanwhile waits from the start. gateway dev is killed during
// the wait and started again; once the provider recovers, a probe closes
// the breaker and both jobs complete.
func TestJobsWaitOutAnOutage(t *testing.T) {
	t.Parallel()
	vendor := newFakeChatVendor(t)
	vendor.down.Store(true)
	catalog := writeCatalog(t, `providers:
  - id: vendor-llm
    name: Vendor (chat)
    adapter: openai
    settings: {base_url: "`+vendor.URL+`", model: chat-1}
    circuit_breaker: {minimum_calls: 2, window_seconds: 60, failure_rate_percent: 50, open_seconds: 3, max_open_seconds: 3, half_open_probes: 1, close_after_successes: 1}
    services:
      llm-tasks:
        models: [chat-1]
        pricing: {unit: per_token, amount: 0.000001, currency: USD}
`)
	g := newGateway(t, "", "--providers", catalog)

	waiting := func(id string) map[string]any {
		_, body, _ := g.do(http.MethodGet, "/v1/llm-tasks/"+id, "")
		var doc struct {
			Data struct {
				Attributes struct {
					Waiting map[string]any `json:"waiting"`
				} `json:"attributes"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(body, &doc))
		return doc.Data.Attributes.Waiting
	}
	first := g.create("llm-tasks", llmTaskBody).Data.ID
	var w map[string]any
	require.Eventually(t, func() bool { w = waiting(first); return w != nil }, 60*time.Second, 200*time.Millisecond,
		"the running job waits once the breaker opened")
	require.Equal(t, "circuit_open", w["reason"])
	require.Equal(t, []any{"vendor-llm"}, w["providers"])
	require.Contains(t, w["message"], "circuit breakers of vendor-llm are open")
	require.Equal(t, "processing", g.get("llm-tasks", first).Data.Attributes.Status, "a processing job stays processing")

	second := g.create("llm-tasks", llmTaskBody).Data.ID
	require.Eventually(t, func() bool { return waiting(second) != nil }, 30*time.Second, 200*time.Millisecond,
		"a new job waits from the start")
	require.Equal(t, "pending", g.get("llm-tasks", second).Data.Attributes.Status)

	// A worker dies during the wait; the outage ends while it is away.
	g.kill()
	vendor.down.Store(false)
	g.start()

	for _, id := range []string{first, second} {
		done := g.waitEnded("llm-tasks", id, 90*time.Second, "completed")
		require.Nil(t, waiting(id), "no longer waiting")
		history := done.Data.Attributes.RoutingHistory
		require.NotEmpty(t, history)
		var last struct {
			ProviderID string `json:"provider_id"`
		}
		require.NoError(t, json.Unmarshal(history[len(history)-1], &last))
		require.Equal(t, "vendor-llm", last.ProviderID)
	}
	var firstHistory []string
	for _, raw := range g.get("llm-tasks", first).Data.Attributes.RoutingHistory {
		firstHistory = append(firstHistory, string(raw))
	}
	require.GreaterOrEqual(t, len(firstHistory), 2, "the failed attempt, then the one after the wait")
	require.True(t, strings.Contains(firstHistory[0], `"attempt":1`), firstHistory[0])
}
