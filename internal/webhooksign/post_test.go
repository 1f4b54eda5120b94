package webhooksign_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/netguard"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
)

// hookServer is a receiver that records each request, its body and the
// client's address (one per connection).
type hookServer struct {
	*httptest.Server
	mu      sync.Mutex
	got     []*http.Request
	bodies  [][]byte
	remotes []string
}

func newHookServer(t *testing.T, answer http.HandlerFunc) *hookServer {
	t.Helper()
	s := &hookServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got, s.bodies, s.remotes = append(s.got, r), append(s.bodies, body), append(s.remotes, r.RemoteAddr)
		s.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// guarded is the network guard's client, loopback allowed for the test
// server.
func guarded() *http.Client { return netguard.NewClient(true, webhooksign.Timeout) }

func message(url string) webhooksign.Message {
	return webhooksign.Message{URL: url + "/hooks", ID: "msg_1", Body: []byte(`{"event":"x"}`),
		Headers: map[string]string{"X-Secret": "s3", "User-Agent": "mine", "webhook-id": "forged"}}
}

func TestPostSendsTheGatewaysHeadersAfterTheReceivers(t *testing.T) {
	t.Parallel()
	s := newSigner(t)
	srv := newHookServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	sent := time.Now()

	answer := webhooksign.Post(context.Background(), guarded(), s, message(srv.URL), sent)
	require.Equal(t, webhooksign.Answer{Outcome: webhooksign.Delivered, Status: http.StatusNoContent}, answer)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Len(t, srv.got, 1)
	h := srv.got[0].Header
	require.Equal(t, "ai-job-gateway-webhooks/1", h.Get("User-Agent"))
	require.Equal(t, "application/json", h.Get("Content-Type"))
	require.Equal(t, "s3", h.Get("X-Secret"))
	require.Equal(t, "msg_1", h.Get("webhook-id"))
	require.NoError(t, webhooksign.Verify(s.PublicKey(), h.Get("webhook-id"), h.Get("webhook-timestamp"), srv.bodies[0], h.Get("webhook-signature"), sent, 0))
}

func TestPostDrainsTheAnswerSoTheConnectionIsReused(t *testing.T) {
	t.Parallel()
	s := newSigner(t)
	srv := newHookServer(t, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", 10<<10)))
	})
	client := guarded()

	for range 2 {
		require.Equal(t, webhooksign.Delivered, webhooksign.Post(context.Background(), client, s, message(srv.URL), time.Now()).Outcome)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Len(t, srv.remotes, 2)
	require.Equal(t, srv.remotes[0], srv.remotes[1], "the second post reuses the first's connection")
}

func TestPostReadsAtMost64KiB(t *testing.T) {
	t.Parallel()
	// An endless answer: reading it all would run into the timeout.
	srv := newHookServer(t, func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 16<<10))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	started := time.Now()
	answer := webhooksign.Post(context.Background(), netguard.NewClient(true, 3*time.Second), newSigner(t), message(srv.URL), started)
	require.Equal(t, webhooksign.Delivered, answer.Outcome)
	require.Less(t, time.Since(started), 2*time.Second)
}

func TestPostClassifiesTheOutcome(t *testing.T) {
	t.Parallel()
	s := newSigner(t)
	answering := func(status int) string {
		return newHookServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }).URL
	}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // nothing listens any more

	for _, tc := range []struct {
		name    string
		client  *http.Client
		url     string
		outcome webhooksign.Outcome
		status  int
		err     string
	}{
		{"2xx", guarded(), answering(http.StatusAccepted), webhooksign.Delivered, http.StatusAccepted, ""},
		{"410", guarded(), answering(http.StatusGone), webhooksign.Gone, http.StatusGone, "410 Gone"},
		{"5xx", guarded(), answering(http.StatusServiceUnavailable), webhooksign.Failed, http.StatusServiceUnavailable, "503 Service Unavailable"},
		{"4xx", guarded(), answering(http.StatusNotFound), webhooksign.Failed, http.StatusNotFound, "404 Not Found"},
		{"network error", guarded(), down.URL, webhooksign.Failed, 0, "connection refused"},
		{"guarded by default", nil, answering(http.StatusOK), webhooksign.Refused, 0, "loopback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer := webhooksign.Post(context.Background(), tc.client, s, message(tc.url), time.Now())
			require.Equal(t, tc.outcome, answer.Outcome)
			require.Equal(t, tc.status, answer.Status)
			if tc.err == "" {
				require.NoError(t, answer.Err)
				return
			}
			require.ErrorContains(t, answer.Err, tc.err)
			require.NotContains(t, answer.Err.Error(), "/hooks", "an error names no URL")
			require.Equal(t, tc.outcome == webhooksign.Refused, errors.Is(answer.Err, netguard.ErrForbiddenAddress))
		})
	}
}

func TestPostTimesOutWithTheShorterTimeout(t *testing.T) {
	t.Parallel()
	srv := newHookServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	answer := webhooksign.Post(context.Background(), netguard.NewClient(true, 300*time.Millisecond), newSigner(t), message(srv.URL), time.Now())
	require.Equal(t, webhooksign.Failed, answer.Outcome)
	require.EqualError(t, answer.Err, "no answer within 300ms")
}
