package builtin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/netguard"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/builtin"
)

func TestMediaClientGuardsSandboxMedia(t *testing.T) {
	t.Parallel()
	media := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "1024")
	}))
	t.Cleanup(media.Close)
	catalog, err := providers.ParseCatalog([]byte(`
providers:
  - id: sb
    name: Sandbox
    adapter: sandbox
    settings: {latency_ms: 0}
    services:
      transcriptions: {pricing: {unit: per_minute, amount: 0.004, currency: USD}}
`))
	require.NoError(t, err)
	run := func(client *http.Client) error {
		r, err := providers.NewRegistry(catalog, builtin.Factories(providers.WithMediaClient(client)))
		require.NoError(t, err)
		a, _ := r.Adapter("sb")
		_, err = a.Run(context.Background(), providers.Call{
			Service: jobs.Transcriptions, Provider: r.Catalog().Providers[0],
			Input: json.RawMessage(`{"type":"audio","url":"` + media.URL + `/talk.mp3"}`),
		})
		return err
	}

	require.ErrorIs(t, run(netguard.NewMediaClient(false, 5*time.Second)), netguard.ErrForbiddenAddress)
	require.NoError(t, run(netguard.NewMediaClient(true, 5*time.Second)))
}
