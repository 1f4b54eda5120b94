package activities_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/builtin"
)

// A provider that misbehaves: the real openai adapter against a server
// that hangs, trickles its answer, or answers garbage. Each try ends within
// the provider's call_timeout_seconds, classified so that the job fails
// over (docs/reliability.md, Faults).
func TestMisbehavingProviders(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	for _, tc := range []struct {
		name      string
		handler   http.HandlerFunc
		retryable bool
		message   string
	}{
		{"hangs", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // so a client that leaves ends r.Context()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}, true, "did not finish within its call_timeout_seconds (1 s)"},
		{"trickles", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, `{"id":"chatcmpl-1","choices":[`)
			for {
				select {
				case <-release:
					return
				case <-r.Context().Done():
					return
				case <-time.After(100 * time.Millisecond):
					_, _ = io.WriteString(w, " ")
					w.(http.Flusher).Flush()
				}
			}
		}, true, "did not finish within its call_timeout_seconds (1 s)"},
		{"answers garbage", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `<html>502 Bad Gateway</html>`)
		}, false, jobs.CodeBadResponse},
		{"answers a huge body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			chunk := strings.Repeat("x", 1<<20)
			_, _ = io.WriteString(w, `{"choices":[{"message":{"content":"`)
			for range 80 { // 80 MiB, over the 64 MiB read of an answer
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
		}, false, jobs.CodeBadResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.handler)
			t.Cleanup(srv.Close)
			timeout := "1"
			if tc.name == "answers a huge body" {
				// Reading 64 MiB on a loaded machine may take over a second;
				// this case is about the size, not the time.
				timeout = "20"
			}
			registry := registryOf(t, llmCatalog("vendor", "Vendor", "openai", `    call_timeout_seconds: `+timeout+`
    settings: {base_url: "`+srv.URL+`/v1", model: m1}
`), builtin.Factories())
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivity(&activities.ProviderCalls{Providers: registry, Projections: &activities.Projections{Store: &recordingStore{}},
				WorkerID: "w", HeartbeatInterval: time.Hour})

			in := call()
			in.ProviderID = "vendor"
			started := time.Now()
			_, err := env.ExecuteActivity(acts.Calls.CallProvider, in)
			require.Less(t, time.Since(started), 30*time.Second, "the try ended")
			var appErr *temporal.ApplicationError
			require.True(t, errors.As(err, &appErr), "%v", err)
			require.Equal(t, !tc.retryable, appErr.NonRetryable(), "%v", err)
			require.Contains(t, appErr.Error(), tc.message)
			var jobErr jobs.Error
			require.NoError(t, appErr.Details(&jobErr))
			require.NotEmpty(t, jobErr.Code)
		})
	}
}

func TestCallTimeoutMustNotBeNegative(t *testing.T) {
	t.Parallel()
	_, err := providers.ParseCatalog([]byte(`providers:
  - {id: v, name: V, adapter: sandbox, call_timeout_seconds: -1, services: {llm-tasks: {pricing: {unit: per_token, amount: 0, currency: USD}}}}
`))
	require.ErrorContains(t, err, "call_timeout_seconds -1 is negative")
}
