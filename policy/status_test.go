package policy_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
)

func TestEffectiveStatus(t *testing.T) {
	t.Parallel()
	const (
		active   = providers.StatusActive
		degraded = providers.StatusDegraded
		disabled = providers.StatusDisabled
	)
	provider := func(status providers.Status, transcriptions providers.Status) *providers.Provider {
		return &providers.Provider{ID: "p", Status: status, Services: map[jobs.ServiceID]*providers.Capability{
			jobs.Transcriptions: {Status: transcriptions},
			jobs.Translations:   {},
		}}
	}
	// services overrides the transcriptions capability.
	services := func(status providers.Status) map[jobs.ServiceID]providers.Status {
		return map[jobs.ServiceID]providers.Status{jobs.Transcriptions: status}
	}

	for _, tc := range []struct {
		name           string
		p              *providers.Provider
		service        jobs.ServiceID
		override       *policy.ProviderOverride
		wantProvider   providers.Status
		wantCapability providers.Status
	}{
		{name: "catalog defaults", p: provider("", ""), service: jobs.Transcriptions,
			wantProvider: active, wantCapability: active},
		{name: "catalog statuses", p: provider(degraded, disabled), service: jobs.Transcriptions,
			wantProvider: degraded, wantCapability: disabled},
		{name: "empty override keeps the catalog", p: provider(degraded, disabled), service: jobs.Transcriptions,
			override: &policy.ProviderOverride{}, wantProvider: degraded, wantCapability: disabled},
		{name: "provider override", p: provider(active, ""), service: jobs.Transcriptions,
			override: &policy.ProviderOverride{Status: degraded}, wantProvider: degraded, wantCapability: active},
		{name: "capability override re-enables a catalog-disabled capability", p: provider(active, disabled), service: jobs.Transcriptions,
			override: &policy.ProviderOverride{Services: services(active)}, wantProvider: active, wantCapability: active},
		{name: "capability override of another service does not apply", p: provider(active, ""), service: jobs.Translations,
			override: &policy.ProviderOverride{Services: services(disabled)}, wantProvider: active, wantCapability: active},
		{name: "provider-level disabled in the catalog disables every capability", p: provider(disabled, active), service: jobs.Transcriptions,
			wantProvider: disabled, wantCapability: disabled},
		{name: "provider-level disabled override wins over an active capability override", p: provider(active, ""), service: jobs.Transcriptions,
			override: &policy.ProviderOverride{Status: disabled, Services: services(active)}, wantProvider: disabled, wantCapability: disabled},
		{name: "provider override re-enables a catalog-disabled provider", p: provider(disabled, ""), service: jobs.Transcriptions,
			override: &policy.ProviderOverride{Status: active}, wantProvider: active, wantCapability: active},
		{name: "degraded capability under an active provider", p: provider(active, ""), service: jobs.Transcriptions,
			override: &policy.ProviderOverride{Services: services(degraded)}, wantProvider: active, wantCapability: degraded},
		{name: "unsupported service", p: provider(active, ""), service: jobs.LLMTasks,
			wantProvider: active, wantCapability: active},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gotProvider, gotCapability := policy.EffectiveStatus(tc.p, tc.service, tc.override)
			require.Equal(t, tc.wantProvider, gotProvider, "provider status")
			require.Equal(t, tc.wantCapability, gotCapability, "capability status")
		})
	}
}
