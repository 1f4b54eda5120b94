package api_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/internal/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/vendorcallback"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/store/storetest"
	"github.com/ai-job-gateway/gateway/workflows"
)

func TestProviderCallbacks(t *testing.T) {
	t.Parallel()
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
		kept, ok, err := b.store.ProviderCallback(context.Background(), running.ID, 2)
		require.NoError(t, err)
		require.True(t, ok)
		require.JSONEq(t, body, string(kept))
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
			{"too large", path(running.ID, 1), `{"x":"` + strings.Repeat("a", api.MaxBodyBytes) + `"}`, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resp := b.do(t, http.MethodPost, tc.path, "", tc.body)
				require.Equal(t, tc.status, resp.Status, string(resp.Body))
				require.Contains(t, string(resp.Body), `"`+tc.code+`"`)
			})
		}
		_, ok, err := b.store.ProviderCallback(context.Background(), running.ID, 1)
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
