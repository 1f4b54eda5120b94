package api_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/vendorcallback"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/store/storetest"
	"github.com/ai-job-gateway/gateway/workflows"
)

func TestProviderCallbacks(t *testing.T) {
	t.Parallel()
	b, tokens := callbackBundle(t, false)
	signals := make(chan int, 4)
	b.temporal.On("SignalWorkflow", mock.Anything, mock.Anything, "", workflows.ProviderCallbackSignal, mock.Anything).
		Run(func(args mock.Arguments) { signals <- args.Get(4).(int) }).Return(nil).Maybe()

	running := b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusProcessing})
	done := b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusCompleted, Result: `{"text":"hi"}`})
	path := func(job string, attempt int) string {
		return "/v1/provider-callbacks/" + job + "/" + strconv.Itoa(attempt) + "?token=" + tokens.Token(job, attempt)
	}
	const body = `{"metadata":{"request_id":"r-1"},"results":{"channels":[]}}`

	t.Run("kept and signalled", func(t *testing.T) {
		resp := b.do(t, http.MethodPost, path(running.ID, 2), "", body)
		require.Equal(t, http.StatusNoContent, resp.Status, string(resp.Body))
		require.Equal(t, 2, <-signals)
		kept, ok, err := b.store.Jobs.ProviderCallback(context.Background(), running.ID, 2)
		require.NoError(t, err)
		require.True(t, ok)
		require.JSONEq(t, body, string(kept))
	})
	t.Run("larger than other routes' bodies", func(t *testing.T) {
		big := `{"results":{"pad":"` + strings.Repeat("a", api.MaxBodyBytes) + `"}}`
		resp := b.do(t, http.MethodPost, path(running.ID, 3), "", big)
		require.Equal(t, http.StatusNoContent, resp.Status, string(resp.Body))
		require.Equal(t, 3, <-signals)
	})
	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name, path, body string
			status           int
			code             string
		}{
			{"no token", "/v1/provider-callbacks/" + running.ID + "/1", body, http.StatusForbidden, "FORBIDDEN"},
			{"another attempt's token", "/v1/provider-callbacks/" + running.ID + "/1?token=" + tokens.Token(running.ID, 2), body, http.StatusForbidden, "FORBIDDEN"},
			{"another job's token", "/v1/provider-callbacks/" + running.ID + "/1?token=" + tokens.Token(done.ID, 1), body, http.StatusForbidden, "FORBIDDEN"},
			{"unknown job", path("0195a3c4-7b1e-7c2d-9e3f-000000000000", 1), body, http.StatusNotFound, "NOT_FOUND"},
			{"attempt not a number", "/v1/provider-callbacks/" + running.ID + "/one?token=x", body, http.StatusNotFound, "NOT_FOUND"},
			{"finished job", path(done.ID, 1), body, http.StatusConflict, "JOB_FINISHED"},
			{"no body", path(running.ID, 1), "", http.StatusBadRequest, "VALIDATION_ERROR"},
			{"too large", path(running.ID, 1), `{"x":"` + strings.Repeat("a", api.CallbackMaxBodyBytes) + `"}`, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resp := b.do(t, http.MethodPost, tc.path, "", tc.body)
				require.Equal(t, tc.status, resp.Status, string(resp.Body))
				require.Contains(t, string(resp.Body), `"`+tc.code+`"`)
			})
		}
		_, ok, err := b.store.Jobs.ProviderCallback(context.Background(), running.ID, 1)
		require.NoError(t, err)
		require.False(t, ok, "nothing refused was kept")
		require.Empty(t, signals, "nothing refused was signalled")
	})
}

func TestProviderCallbacksOffWithoutTokens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	running := b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusProcessing})
	resp := b.do(t, http.MethodPost, "/v1/provider-callbacks/"+running.ID+"/1?token=x", "", `{"a":1}`)
	require.Equal(t, http.StatusNotFound, resp.Status)
}

// callbackBundle is a bundle that takes vendor callbacks, and its tokens;
// signalled: its Temporal mock takes their signals.
func callbackBundle(t *testing.T, signalled bool) (*bundle, *vendorcallback.Tokens) {
	t.Helper()
	signer, err := webhooksign.NewSigner(make([]byte, 32))
	require.NoError(t, err)
	tokens, err := vendorcallback.NewTokens(signer)
	require.NoError(t, err)
	b := setupJobOps(t, storetest.SQLite, func(cfg *jobops.Config) {
		cfg.CallbackTokens = tokens
		cfg.Callbacks = cfg.Jobs.(jobops.CallbackStore)
	}, func(cfg *api.Config) {
		cfg.Callbacks = cfg.Jobs.(api.CallbackReceiver)
	})
	if signalled {
		b.temporal.On("SignalWorkflow", mock.Anything, mock.Anything, "", workflows.ProviderCallbackSignal, mock.Anything).Return(nil).Maybe()
	}
	return b, tokens
}

// stalledCallback posts to path announcing length bytes and sends one.
func stalledCallback(t *testing.T, addr, path string, length int) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", path, addr, length)
	require.NoError(t, err)
	return conn, bufio.NewReader(conn)
}

// A forged callback is refused from its address alone, before its body is
// read: a large, slow body gets its 403 at once, not after the read
// timeout, and costs no memory.
func TestForgedCallbackIsRefusedBeforeItsBodyIsRead(t *testing.T) {
	t.Parallel()
	b, tokens := callbackBundle(t, true)
	running := b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusProcessing})
	addr := serveWith(t, b, api.ServerTimeouts{ReadHeader: 30 * time.Second, Read: 30 * time.Second, Write: time.Minute, Idle: time.Minute})

	for name, path := range map[string]string{
		"bad token":           "/v1/provider-callbacks/" + running.ID + "/1?token=bad",
		"attempt 0":           "/v1/provider-callbacks/" + running.ID + "/0?token=" + tokens.Token(running.ID, 0),
		"another job's token": "/v1/provider-callbacks/" + running.ID + "/1?token=" + tokens.Token(uuid.NewString(), 1),
	} {
		began := time.Now()
		conn, r := stalledCallback(t, addr, path, 8_000_000)
		require.NoError(t, conn.SetReadDeadline(began.Add(5*time.Second)))
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err, "%s: the refusal must come without the body", name)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode, name)
		require.Less(t, time.Since(began), 3*time.Second, name)
	}
}

// At most api.CallbackConcurrency callback bodies are read at once; one
// more is answered 429 with Retry-After, and taken once a slot is free.
func TestCallbackBodiesAreReadFewAtATime(t *testing.T) {
	t.Parallel()
	b, tokens := callbackBundle(t, true)
	running := b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusProcessing})
	addr := serveWith(t, b, api.ServerTimeouts{ReadHeader: time.Minute, Read: time.Minute, Write: time.Minute, Idle: time.Minute})
	path := func(attempt int) string {
		return "/v1/provider-callbacks/" + running.ID + "/" + strconv.Itoa(attempt) + "?token=" + tokens.Token(running.ID, attempt)
	}

	held := make([]net.Conn, api.CallbackConcurrency)
	readers := make([]*bufio.Reader, api.CallbackConcurrency)
	for i := range held {
		held[i], readers[i] = stalledCallback(t, addr, path(i+1), 1000)
	}
	// The held posts are being read once the server answers another
	// request on a connection of its own.
	probe := 100
	require.Eventually(t, func() bool {
		probe++
		resp := b.do(t, http.MethodPost, path(probe), "", `{"results":{}}`)
		if resp.Status == http.StatusNoContent {
			// A slot was still free: not all held posts reached it yet.
			// One that arrived while a probe held its slot was refused:
			// it is posted again.
			for i, r := range readers {
				_ = held[i].SetReadDeadline(time.Now().Add(time.Millisecond))
				if _, err := r.Peek(1); err == nil {
					_ = held[i].Close()
					probe++
					held[i], readers[i] = stalledCallback(t, addr, path(probe), 1000)
					continue
				}
				_ = held[i].SetReadDeadline(time.Time{})
			}
			return false
		}
		require.Equal(t, http.StatusTooManyRequests, resp.Status, string(resp.Body))
		require.Contains(t, string(resp.Body), `"RATE_LIMITED"`)
		require.Equal(t, "2", resp.Header.Get("Retry-After"))
		return true
	}, 20*time.Second, 20*time.Millisecond) // the held posts reach the server late on a loaded machine

	// Once the held posts end (their vendors hang up), their slots are
	// free again.
	for _, conn := range held {
		require.NoError(t, conn.Close())
	}
	require.Eventually(t, func() bool {
		probe++
		return b.do(t, http.MethodPost, path(probe), "", `{"results":{}}`).Status == http.StatusNoContent
	}, 5*time.Second, 20*time.Millisecond)
}
