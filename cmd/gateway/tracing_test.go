package main

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP trace receiver: it keeps every span exported
// to it.
type collector struct {
	*httptest.Server
	mu    sync.Mutex
	spans map[string][]string // trace id -> span names
	kinds map[string]string   // span name -> service.name of its process
}

func newCollector(t *testing.T) *collector {
	c := &collector{spans: map[string][]string{}, kinds: map[string]string{}}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req collectorpb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, rs := range req.GetResourceSpans() {
			service := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					id := hex.EncodeToString(s.GetTraceId())
					c.spans[id] = append(c.spans[id], s.GetName())
					c.kinds[s.GetName()] = service
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *collector) trace(id string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.spans[id])
}

// TestAJobIsOneTrace: with OTEL_EXPORTER_OTLP_ENDPOINT set, a job's
// request, workflow, activities and the provider's HTTP call are spans of
// one trace, whose id is the job's meta.system.trace_id; the provider
// receives the trace context.
func TestAJobIsOneTrace(t *testing.T) {
	t.Parallel()
	otlp := newCollector(t)
	var traceparent string
	var vendorMu sync.Mutex
	vendor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vendorMu.Lock()
		traceparent = r.Header.Get("traceparent")
		vendorMu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,
"message":{"role":"assistant","content":"Five words, as asked."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`)
	}))
	t.Cleanup(vendor.Close)
	catalog := writeCatalog(t, `providers:
  - id: openai-fake
    name: OpenAI (fake)
    adapter: openai
    settings: {base_url: "`+vendor.URL+`/v1", model: gpt-4o-mini}
    services:
      llm-tasks:
        models: [gpt-4o-mini]
        pricing: {unit: per_token, amount: 0.0000006, currency: USD}
`)
	g := newGatewayEnv(t, "", "", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.URL, "OTEL_BSP_SCHEDULE_DELAY=100"},
		"--providers", catalog)

	id := g.create("llm-tasks", llmTaskBody).Data.ID
	g.waitEnded("llm-tasks", id, 60*time.Second, "completed")
	status, body, _ := g.do(http.MethodGet, "/v1/llm-tasks/"+id, "")
	require.Equal(t, http.StatusOK, status)
	traceID := jsonPath(t, body, "data", "meta", "system", "trace_id")
	require.Len(t, traceID, 32, "meta.system.trace_id: %s", body)

	want := []string{"POST /v1/llm-tasks", "StartWorkflow:JobWorkflow", "RunWorkflow:JobWorkflow", "RunActivity:CallProvider", "HTTP POST"}
	require.Eventually(t, func() bool {
		spans := otlp.trace(traceID)
		for _, name := range want {
			if !slices.ContainsFunc(spans, func(s string) bool { return strings.HasPrefix(s, name) }) {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "spans of trace %s: %v (want %v)", traceID, otlp.trace(traceID), want)
	vendorMu.Lock()
	require.Contains(t, traceparent, traceID, "the provider receives the trace context")
	vendorMu.Unlock()
	require.Equal(t, "ai-job-gateway-dev", otlp.kinds["RunWorkflow:JobWorkflow"])
}

// jsonPath reads a string member of a JSON document.
func jsonPath(t *testing.T, body []byte, path ...string) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(body, &v))
	for _, p := range path {
		m, ok := v.(map[string]any)
		require.True(t, ok, "%s in %s", p, body)
		v = m[p]
	}
	s, _ := v.(string)
	return s
}
