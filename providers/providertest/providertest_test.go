package providertest_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/providertest"
)

func TestSandboxCatalogIsValidAndCoversEveryService(t *testing.T) {
	t.Parallel()
	c, err := providers.ParseCatalog([]byte(providertest.SandboxCatalog("s", 250)))
	require.NoError(t, err)
	p, ok := c.Lookup("s")
	require.True(t, ok)
	require.Len(t, p.Services, len(jobs.Services()))
	require.EqualValues(t, 250, p.Settings["latency_ms"])
}

func TestVendorAnswersAndCounts(t *testing.T) {
	t.Parallel()
	v := providertest.NewVendor(t, func(w http.ResponseWriter, _ *http.Request) { providertest.WriteJSON(w, `{}`) })
	v.RequireAuth("Authorization", "Bearer k")
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, v.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer k")
	resp, err := v.Client().Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	v.Answer(http.StatusTooManyRequests, `slow down`, "Retry-After", "2")
	resp, err = v.Client().Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "2", resp.Header.Get("Retry-After"))
	require.Equal(t, 2, v.Requests())
}

func TestRequireErrorReturnsTheClassifiedError(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("wrapped: %w", &providers.Error{Kind: providers.KindRetryable, Code: jobs.CodeProviderUnavailable,
		Message: "provider \"p\" answered 503", StatusCode: 503, RetryAfter: time.Second})
	pe := providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindRetryable, Code: jobs.CodeProviderUnavailable,
		Status: 503, RetryAfter: time.Second, Says: "answered 503", Secret: "sk-"})
	require.Equal(t, 503, pe.StatusCode)
}
