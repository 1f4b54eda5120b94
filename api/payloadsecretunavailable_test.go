package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/store"
)

// TestJobHistorySecretUnavailable: a job's history whose scope secret
// cannot be read now (the store out of reach) answers a retry and a
// webhook resend 503 SERVICE_UNAVAILABLE with Retry-After, as the
// store's other passing failures do, not 500; the store's error stays
// in the log.
func TestJobHistorySecretUnavailable(t *testing.T) {
	t.Parallel()
	keys, err := payloadcodec.NewKeyring("k1", map[string][]byte{"k1": payloadcodec.GenerateKey()})
	require.NoError(t, err)
	reader := payloadcodec.DataConverter(converter.NewCodecDataConverter(converter.GetDefaultDataConverter(),
		payloadcodec.New(keys, failingSecrets{}, payloadcodec.Options{}).Decoder()))
	var opened *store.Store
	b := setupJobOps(t, sqliteInto(&opened), func(c *jobops.Config) { c.Webhooks = opened.Webhooks; c.DataConverter = reader },
		func(c *api.Config) { c.Webhooks = c.Jobs.(api.WebhookOps) })
	written := payloadcodec.NewMemorySecrets(true)

	failed := b.seed(t, jobs.Record{Service: "transcriptions", Tenant: tenantA, Status: jobs.StatusFailed,
		ErrorCode: jobs.CodeProvidersExhausted, ErrorMessage: "every provider failed"})
	b.ranWith(t, failed, nil)
	b.encryptHistory(t, failed, written)
	r := b.do(t, http.MethodPost, jobPath("transcriptions", failed.ID, "/retry"), b.writeToken(t), nil)
	requireError(t, r, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Contains(t, string(r.Body), "try again")
	require.NotContains(t, string(r.Body), "10.0.0.5")

	hooked := b.hookedJob(t, tenantA)
	b.encryptHistory(t, hooked, written)
	r = b.do(t, http.MethodPost, jobPath("transcriptions", hooked.ID, "/webhooks/resend"), b.writeToken(t), nil)
	requireError(t, r, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
	require.NotContains(t, string(r.Body), "10.0.0.5")
}
