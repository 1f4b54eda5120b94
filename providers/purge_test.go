package providers_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// purgingAdapter deletes its vendor's copies: it fails with err when set.
type purgingAdapter struct {
	countingAdapter
	err     error
	handles []string
	purged  []providers.Call
}

func (p *purgingAdapter) Purge(_ context.Context, call providers.Call, handle string) error {
	p.handles = append(p.handles, handle)
	p.purged = append(p.purged, call)
	return p.err
}

// keepsNothing declares that its vendor keeps nothing.
type keepsNothing struct{ fakeAdapter }

func (keepsNothing) VendorRetention() providers.PurgeOutcome { return providers.PurgeNotRetained }

// purgeRegistry has providers "purging" (a Purger of llm-tasks), "local"
// (keeps nothing), "vendor" (says nothing) and "broken" (disabled, its
// adapter not built).
func purgeRegistry(t *testing.T, purger *purgingAdapter) *providers.Registry {
	t.Helper()
	c, err := providers.ParseCatalog([]byte(`providers:
  - {id: purging, name: P, adapter: purging, services: {llm-tasks: {pricing: {unit: per_token, amount: 0, currency: USD}}}}
  - {id: local, name: L, adapter: local, services: {llm-tasks: {pricing: {unit: per_token, amount: 0, currency: USD}}}}
  - {id: vendor, name: V, adapter: vendor, services: {llm-tasks: {pricing: {unit: per_token, amount: 0, currency: USD}}}}
  - {id: broken, name: B, adapter: broken, status: disabled, services: {llm-tasks: {pricing: {unit: per_token, amount: 0, currency: USD}}}}
`))
	require.NoError(t, err)
	r, err := providers.NewRegistry(c, map[string]providers.Factory{
		"purging": func(*providers.Provider) (providers.Adapter, error) { return purger, nil },
		"local":   func(*providers.Provider) (providers.Adapter, error) { return keepsNothing{}, nil },
		"vendor":  fakeFactory,
		"broken":  func(*providers.Provider) (providers.Adapter, error) { return nil, errors.New("API key not set") },
	})
	require.NoError(t, err)
	return r
}

func TestRegistryPurgesThroughAPurger(t *testing.T) {
	t.Parallel()
	purger := &purgingAdapter{}
	r := purgeRegistry(t, purger)

	outcome, err := r.Purge(context.Background(), "purging", jobs.LLMTasks, "h-1")
	require.NoError(t, err)
	require.Equal(t, providers.PurgePurged, outcome)
	require.Equal(t, []string{"h-1"}, purger.handles)
	require.Equal(t, jobs.LLMTasks, purger.purged[0].Service)
	require.Equal(t, "purging", purger.purged[0].Provider.ID)

	// The adapter's classified failures pass as they are.
	purger.err = providers.Retryable(jobs.CodeProviderUnavailable, "answered 503", nil)
	outcome, err = r.Purge(context.Background(), "purging", jobs.LLMTasks, "h-2")
	require.Equal(t, providers.PurgeFailed, outcome)
	require.Same(t, purger.err, err)

	// Others become permanent ones naming the provider.
	cause := errors.New("malformed URL")
	purger.err = cause
	outcome, err = r.Purge(context.Background(), "purging", jobs.LLMTasks, "h-3")
	require.Equal(t, providers.PurgeFailed, outcome)
	var perr *providers.Error
	require.ErrorAs(t, err, &perr)
	require.Equal(t, providers.KindPermanent, perr.Kind)
	require.ErrorIs(t, err, cause)
	require.Contains(t, perr.Message, `provider "purging"`)

	// An ended ctx is its own error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	purger.err = errors.New("dial: context canceled")
	outcome, err = r.Purge(ctx, "purging", jobs.LLMTasks, "h-4")
	require.Equal(t, providers.PurgeFailed, outcome)
	require.Equal(t, context.Canceled, err)

	// A service the adapter does not serve, or no handle: refused before
	// the adapter is called.
	purger.err = nil
	for _, tc := range []struct {
		service jobs.ServiceID
		handle  string
		code    string
	}{{jobs.Transcriptions, "h-5", jobs.CodeUnsupportedService}, {jobs.LLMTasks, "", jobs.CodeProviderRejected}} {
		outcome, err = r.Purge(context.Background(), "purging", tc.service, tc.handle)
		require.Equal(t, providers.PurgeFailed, outcome)
		require.ErrorAs(t, err, &perr)
		require.Equal(t, providers.KindPermanent, perr.Kind)
		require.Equal(t, tc.code, perr.Code)
	}
	require.Len(t, purger.handles, 4)
}

func TestRegistryReportsWhatNonPurgersRetain(t *testing.T) {
	t.Parallel()
	r := purgeRegistry(t, &purgingAdapter{})

	outcome, err := r.Purge(context.Background(), "local", jobs.LLMTasks, "")
	require.NoError(t, err)
	require.Equal(t, providers.PurgeNotRetained, outcome, "declared by the adapter")

	outcome, err = r.Purge(context.Background(), "vendor", jobs.LLMTasks, "h")
	require.NoError(t, err)
	require.Equal(t, providers.PurgeNoAPI, outcome, "an adapter that declares nothing: its vendor is assumed to keep the work")

	outcome, err = r.Purge(context.Background(), "broken", jobs.LLMTasks, "h")
	require.Equal(t, providers.PurgeFailed, outcome)
	var perr *providers.Error
	require.ErrorAs(t, err, &perr)
	require.Equal(t, providers.KindPermanent, perr.Kind)
	require.Contains(t, perr.Message, "API key not set")
}

func TestRegistryPurgeOfAnUnknownProvider(t *testing.T) {
	t.Parallel()
	r := purgeRegistry(t, &purgingAdapter{})
	outcome, err := r.Purge(context.Background(), "gone", jobs.LLMTasks, "h")
	require.Equal(t, providers.PurgeFailed, outcome)
	var perr *providers.Error
	require.ErrorAs(t, err, &perr)
	require.Equal(t, providers.KindPermanent, perr.Kind)
	require.Contains(t, perr.Message, `provider "gone" is not in the catalog`)
}
