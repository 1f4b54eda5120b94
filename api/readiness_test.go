package api_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"

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
