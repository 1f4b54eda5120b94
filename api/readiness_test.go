package api_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// /readyz is on the public listener: during an outage it names the
// dependency that failed and nothing else; the log has the details.
func TestReadyzNamesTheFailingDependencyAndLeaksNothing(t *testing.T) {
	t.Parallel()
	const secret = `failed to connect to user=gateway database=jobs: dial tcp 10.1.2.3:5432: connect: connection refused`
	var logs syncBuffer
	var down atomic.Bool
	down.Store(true)
	b := setupConfigured(t, storetest.SQLite, func(cfg *api.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		cfg.ReadyChecks = []api.ReadyCheck{
			{Name: "store", Check: func(context.Context) error {
				if down.Load() {
					return errors.New(secret)
				}
				return nil
			}},
			{Name: "identity", Check: func(context.Context) error { return nil }},
		}
	})

	resp := b.do(t, http.MethodGet, "/readyz", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, resp.Status)
	require.JSONEq(t, `{"status":"not ready","checks":{"store":"unavailable","identity":"ok"}}`, string(resp.Body))
	require.Contains(t, logs.String(), "10.1.2.3:5432", "the log keeps what the body may not say")

	down.Store(false)
	resp = b.do(t, http.MethodGet, "/readyz", "", nil)
	require.Equal(t, http.StatusOK, resp.Status)
	require.JSONEq(t, `{"status":"ready","checks":{"store":"ok","identity":"ok"}}`, string(resp.Body))
}

// A degradable dependency must pass once; after that its failure is
// reported and the process stays ready (serve's Temporal: jobs go to the
// outbox meanwhile).
func TestReadyzStaysReadyWhileADegradableDependencyIsAway(t *testing.T) {
	t.Parallel()
	var temporalUp atomic.Bool
	b := setupConfigured(t, storetest.SQLite, func(cfg *api.Config) {
		cfg.ReadyChecks = []api.ReadyCheck{
			{Name: "store", Check: func(context.Context) error { return nil }},
			{Name: "temporal", Degradable: true, Check: func(context.Context) error {
				if temporalUp.Load() {
					return nil
				}
				return errors.New("dial tcp 10.0.0.9:7233: connection refused")
			}},
		}
	})
	ready := func(status int, body string) {
		t.Helper()
		resp := b.do(t, http.MethodGet, "/readyz", "", nil)
		require.Equal(t, status, resp.Status)
		require.JSONEq(t, body, string(resp.Body))
	}
	ready(http.StatusServiceUnavailable, `{"status":"not ready","checks":{"store":"ok","temporal":"unavailable"}}`)
	temporalUp.Store(true)
	ready(http.StatusOK, `{"status":"ready","checks":{"store":"ok","temporal":"ok"}}`)
	temporalUp.Store(false)
	ready(http.StatusOK, `{"status":"ready","checks":{"store":"ok","temporal":"degraded"}}`)
}

// Every answer carries X-Request-Id: the client's when it is a sensible
// one, else a new one; an error body names it.
func TestEveryAnswerCarriesARequestID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp := b.do(t, http.MethodGet, "/healthz", "", nil)
	require.Len(t, resp.Header.Get("X-Request-Id"), 36, "a new UUID")

	resp = b.do(t, http.MethodGet, "/v1/jobs", "", nil, "X-Request-Id", "client-trace.42:a_b")
	require.Equal(t, "client-trace.42:a_b", resp.Header.Get("X-Request-Id"), "the client's own")
	require.Contains(t, string(resp.Body), `"request_id":"client-trace.42:a_b"`)

	for _, bad := range []string{"has space", strings.Repeat("a", 129), "quote\"d", "naïve"} {
		resp = b.do(t, http.MethodGet, "/healthz", "", nil, "X-Request-Id", bad)
		got := resp.Header.Get("X-Request-Id")
		require.NotEqual(t, bad, got, "an id that could garble a log line is replaced")
		require.Len(t, got, 36)
	}
}

// An optional dependency never makes the process unready, and a hung
// check does not hold the answer past a probe's timeout.
func TestReadyzOptionalAndHungChecks(t *testing.T) {
	t.Parallel()
	b := setupConfigured(t, storetest.SQLite, func(cfg *api.Config) {
		cfg.ReadyChecks = []api.ReadyCheck{
			{Name: "store", Check: func(context.Context) error { return nil }},
			{Name: "temporal", Optional: true, Check: func(ctx context.Context) error {
				<-ctx.Done() // a partition: no answer at all
				return ctx.Err()
			}},
		}
	})
	began := time.Now()
	resp := b.do(t, http.MethodGet, "/readyz", "", nil)
	require.Less(t, time.Since(began), time.Second, "within a probe's default timeout")
	require.Equal(t, http.StatusOK, resp.Status)
	require.JSONEq(t, `{"status":"ready","checks":{"store":"ok","temporal":"degraded"}}`, string(resp.Body))
}
