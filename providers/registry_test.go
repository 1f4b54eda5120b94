package providers_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

type fakeAdapter struct{ id string }

// Services declares every service: the tests' catalogs decide.
func (f fakeAdapter) Services() []jobs.ServiceID { return jobs.ServiceIDs() }

func (f fakeAdapter) Run(context.Context, providers.Call) (json.RawMessage, error) {
	return json.RawMessage(`{"id":"` + f.id + `"}`), nil
}

func fakeFactory(p *providers.Provider) (providers.Adapter, error) {
	return fakeAdapter{id: p.ID}, nil
}

func twoProviders(t *testing.T, adapter1, adapter2 string) *providers.Catalog {
	t.Helper()
	c, err := providers.ParseCatalog([]byte(`
providers:
  - {id: a, name: A, adapter: ` + adapter1 + `, services: {llm-tasks: {pricing: {unit: per_token, amount: 0, currency: USD}}}}
  - {id: b, name: B, adapter: ` + adapter2 + `, services: {llm-tasks: {pricing: {unit: per_token, amount: 0, currency: USD}}}}
`))
	require.NoError(t, err)
	return c
}

func TestNewRegistry(t *testing.T) {
	t.Parallel()

	c := twoProviders(t, "sandbox", "openai")
	r, err := providers.NewRegistry(c, map[string]providers.Factory{"sandbox": fakeFactory, "openai": fakeFactory})
	require.NoError(t, err)
	require.Same(t, c, r.Catalog())

	a, ok := r.Adapter("b")
	require.True(t, ok)
	out, err := a.Run(context.Background(), providers.Call{Service: jobs.LLMTasks})
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"b"}`, string(out))

	_, ok = r.Adapter("missing")
	require.False(t, ok)
}

func TestNewRegistryUnknownAdapter(t *testing.T) {
	t.Parallel()

	c := twoProviders(t, "sandbox", "foo")
	_, err := providers.NewRegistry(c, map[string]providers.Factory{"sandbox": fakeFactory, "openai": fakeFactory})
	require.EqualError(t, err, `providers file: provider "b" uses unknown adapter "foo" (known adapters: openai, sandbox)`)
}

func TestNewRegistryFactoryError(t *testing.T) {
	t.Parallel()

	cause := errors.New("settings: base_url is missing")
	failing := func(*providers.Provider) (providers.Adapter, error) { return nil, cause }
	c := twoProviders(t, "openai", "openai")
	_, err := providers.NewRegistry(c, map[string]providers.Factory{"openai": failing})
	require.ErrorIs(t, err, cause)
	require.ErrorContains(t, err, `provider "a" (adapter openai): settings: base_url is missing`)
	require.ErrorContains(t, err, `provider "b" (adapter openai)`, "every provider's failure is reported")
}

func TestErrorFormatting(t *testing.T) {
	t.Parallel()

	cause := errors.New("dial tcp: connection refused")
	tests := []struct {
		err  *providers.Error
		kind providers.ErrorKind
		text string
	}{
		{providers.Retryable("PROVIDER_UNAVAILABLE", "provider down", cause), providers.KindRetryable, "PROVIDER_UNAVAILABLE: provider down: dial tcp: connection refused"},
		{providers.Permanent("PROVIDER_REJECTED", "bad key", nil), providers.KindPermanent, "PROVIDER_REJECTED: bad key"},
		{providers.InputError("AUDIO_UNREADABLE", "404", nil), providers.KindInput, "AUDIO_UNREADABLE: 404"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.kind, tt.err.Kind)
		require.EqualError(t, tt.err, tt.text)
	}

	var wrapped error = providers.Retryable("X", "y", cause)
	require.ErrorIs(t, wrapped, cause)
	var pe *providers.Error
	require.ErrorAs(t, errors.Join(errors.New("ctx"), wrapped), &pe)
	require.Equal(t, "retryable", pe.Kind.String())
}

type timedAdapter struct {
	fakeAdapter
	d time.Duration
}

func (t timedAdapter) ExpectedDuration() time.Duration { return t.d }

func TestExpectedDuration(t *testing.T) {
	t.Parallel()

	c, err := providers.ParseCatalog([]byte(`
providers:
  - {id: estimating, name: E, adapter: timed, latency_ms_hint: 900, services: {llm-tasks: {pricing: {unit: per_token, amount: 0, currency: USD}}}}
  - {id: hinted, name: H, adapter: plain, latency_ms_hint: 250, services: {llm-tasks: {pricing: {unit: per_token, amount: 0, currency: USD}}}}
  - {id: unknown, name: U, adapter: plain, services: {llm-tasks: {pricing: {unit: per_token, amount: 0, currency: USD}}}}
`))
	require.NoError(t, err)
	r, err := providers.NewRegistry(c, map[string]providers.Factory{
		"timed": func(*providers.Provider) (providers.Adapter, error) { return timedAdapter{d: 0}, nil },
		"plain": fakeFactory,
	})
	require.NoError(t, err)

	for _, tt := range []struct {
		id   string
		want time.Duration
		ok   bool
	}{
		{"estimating", 0, true},
		{"hinted", 0, false}, // latency_ms_hint is for routing only
		{"unknown", 0, false},
		{"missing", 0, false},
	} {
		d, ok := r.ExpectedDuration(tt.id)
		require.Equal(t, tt.ok, ok, tt.id)
		require.Equal(t, tt.want, d, tt.id)
	}
}

func TestDisabledProviderNeedNotBeUsable(t *testing.T) {
	t.Parallel()
	broken := func(*providers.Provider) (providers.Adapter, error) {
		return nil, errors.New("apertium-apy is not installed")
	}
	c := twoProviders(t, "sandbox", "apertium")
	_, err := providers.NewRegistry(c, map[string]providers.Factory{"sandbox": fakeFactory, "apertium": broken})
	require.ErrorContains(t, err, "apertium-apy is not installed", "an active provider must be usable")

	p, _ := c.Lookup("b")
	p.Status = providers.StatusDisabled
	r, err := providers.NewRegistry(c, map[string]providers.Factory{"sandbox": fakeFactory, "apertium": broken})
	require.NoError(t, err)
	a, ok := r.Adapter("b")
	require.True(t, ok)
	_, err = a.Run(context.Background(), providers.Call{Service: jobs.LLMTasks})
	var perr *providers.Error
	require.ErrorAs(t, err, &perr)
	require.Equal(t, providers.KindPermanent, perr.Kind, "enabled by an administrator anyway: its calls fail over")
	require.Contains(t, perr.Error(), "apertium-apy is not installed")
}

// countingAdapter declares llm-tasks and counts the calls that reach it.
type countingAdapter struct{ calls atomic.Int64 }

func (c *countingAdapter) Services() []jobs.ServiceID { return []jobs.ServiceID{jobs.LLMTasks} }

func (c *countingAdapter) Run(context.Context, providers.Call) (json.RawMessage, error) {
	c.calls.Add(1)
	return json.RawMessage(`{}`), nil
}

func (c *countingAdapter) Submit(context.Context, providers.Call) (string, error) {
	c.calls.Add(1)
	return "h", nil
}

func (c *countingAdapter) Check(context.Context, providers.Call, string) (providers.Check, error) {
	c.calls.Add(1)
	return providers.Check{Done: true}, nil
}

func TestNewRegistryRefusesAServiceTheAdapterDoesNotDeclare(t *testing.T) {
	t.Parallel()

	c, err := providers.ParseCatalog([]byte(`providers:
  - {id: chat, name: Chat, adapter: counting, services: {
      llm-tasks: {pricing: {unit: per_token, amount: 0, currency: USD}},
      translations: {pricing: {unit: per_character, amount: 0, currency: USD}}}}
`))
	require.NoError(t, err)
	_, err = providers.NewRegistry(c, map[string]providers.Factory{
		"counting": func(*providers.Provider) (providers.Adapter, error) { return &countingAdapter{}, nil },
	})
	require.EqualError(t, err, `providers file: provider "chat" lists service translations, which adapter counting does not serve (it serves llm-tasks)`)
}

func TestRegistryRefusesCallsForUndeclaredServices(t *testing.T) {
	t.Parallel()

	adapter := &countingAdapter{}
	r, err := providers.NewRegistry(twoProviders(t, "counting", "counting"), map[string]providers.Factory{
		"counting": func(*providers.Provider) (providers.Adapter, error) { return adapter, nil },
	})
	require.NoError(t, err)
	a, ok := r.Adapter("a")
	require.True(t, ok)
	_, isSubmitter := a.(providers.Submitter)
	require.True(t, isSubmitter, "an asynchronous adapter stays one")
	s, ok := r.Submitter("a")
	require.True(t, ok)

	refused := func(err error) {
		t.Helper()
		var perr *providers.Error
		require.ErrorAs(t, err, &perr)
		require.Equal(t, providers.KindPermanent, perr.Kind)
		require.Equal(t, jobs.CodeUnsupportedService, perr.Code)
		require.Contains(t, perr.Message, `provider "a" (adapter counting) does not serve transcriptions`)
	}
	call := providers.Call{Service: jobs.Transcriptions}
	_, err = a.Run(context.Background(), call)
	refused(err)
	_, err = s.Submit(context.Background(), call)
	refused(err)
	_, err = s.Check(context.Background(), call, "h")
	refused(err)
	require.Zero(t, adapter.calls.Load(), "a refused call never reaches the adapter")

	call.Service = jobs.LLMTasks
	_, err = a.Run(context.Background(), call)
	require.NoError(t, err)
	_, err = s.Submit(context.Background(), call)
	require.NoError(t, err)
	_, err = s.Check(context.Background(), call, "h")
	require.NoError(t, err)
	require.EqualValues(t, 3, adapter.calls.Load())
}
