package policy_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
)

// pol builds a candidate policy updated minutes after a fixed instant.
func pol(id, tenant, application string, minutes int, services ...jobs.ServiceID) policy.Policy {
	return policy.Policy{
		ID: id, Tenant: tenant, Application: application, Services: services, Version: 1,
		UpdatedAt: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC).Add(time.Duration(minutes) * time.Minute),
	}
}

const (
	tr  = jobs.Transcriptions
	tl  = jobs.Translations
	llm = jobs.LLMTasks
)

func TestResolve(t *testing.T) {
	t.Parallel()
	var (
		tenantApp       = pol("tenant-app", "acme", "mobile", 1, tr)
		tenantAppOld    = pol("tenant-app-old", "acme", "mobile", 0, tr)
		tenantOtherApp  = pol("tenant-other-app", "acme", "web", 9, tr)
		globalApp       = pol("global-app", "", "mobile", 2, tr)
		tenantLatest    = pol("tenant-latest", "acme", "", 5, tr)
		tenantOlder     = pol("tenant-older", "acme", "", 3, tr)
		tenantOtherSvc  = pol("tenant-translations", "acme", "", 8, tl)
		globalLatest    = pol("global-latest", "", "", 4, tr)
		globalOlder     = pol("global-older", "", "", 1, tr)
		legacyAll       = pol("legacy-all", "acme", "", 6)          // services [] = every service
		legacyTwo       = pol("legacy-two", "acme", "", 7, tl, llm) // earlier multi-service form
		globalLegacyAll = pol("global-legacy-all", "", "", 6)       // gateway-wide, every service
		otherTenant     = pol("other-tenant", "globex", "", 20, tr) // never matches acme
		otherTenantApp  = pol("other-tenant-app", "globex", "mobile", 20, tr)
		defaultForTL    = pol("default-translations", "acme", "", 0, tl)
		globalDefault   = pol("global-template", "", "", 0, tr)
		otherDefault    = pol("globex-default", "globex", "", 0, tr)
		appDefault      = pol("app-default", "acme", "web", 0, tr)
	)
	scope := policy.Scope{Tenant: "acme", Service: tr, Application: "mobile"}
	withDefault := func(s policy.Scope, id string) policy.Scope { s.TenantDefaultPolicyID = id; return s }
	noApp := func(s policy.Scope) policy.Scope { s.Application = ""; return s }

	tests := []struct {
		name       string
		candidates []policy.Policy
		scope      policy.Scope
		wantID     string
		wantSource jobs.Source
	}{
		{"tenant application policy wins over everything", []policy.Policy{globalLatest, tenantLatest, globalApp, tenantApp, tenantAppOld, otherTenantApp},
			withDefault(scope, tenantLatest.ID), "tenant-app", jobs.SourceTenantApplication},
		{"the most recently updated tenant application policy wins", []policy.Policy{tenantAppOld, tenantApp},
			scope, "tenant-app", jobs.SourceTenantApplication},
		{"another tenant's application policy is ignored", []policy.Policy{otherTenantApp, globalApp},
			scope, "global-app", jobs.SourceGlobalApplication},
		{"global application policy before the tenant default", []policy.Policy{tenantLatest, globalApp, tenantOtherApp},
			withDefault(scope, tenantLatest.ID), "global-app", jobs.SourceGlobalApplication},
		{"application policies are skipped without X-Application", []policy.Policy{tenantApp, globalApp, globalLatest},
			noApp(scope), "global-latest", jobs.SourceGlobalLatest},
		{"tenant default when no application policy matches", []policy.Policy{tenantLatest, tenantOlder, globalLatest, tenantOtherApp},
			withDefault(scope, tenantOlder.ID), "tenant-older", jobs.SourceTenantDefault},
		{"tenant default may be a gateway-wide template", []policy.Policy{tenantLatest, globalDefault},
			withDefault(noApp(scope), globalDefault.ID), "global-template", jobs.SourceTenantDefault},
		{"tenant default that does not cover the service is skipped", []policy.Policy{defaultForTL, tenantLatest},
			withDefault(noApp(scope), defaultForTL.ID), "tenant-latest", jobs.SourceTenantLatest},
		{"tenant default that no longer exists is skipped", []policy.Policy{tenantLatest},
			withDefault(noApp(scope), "deleted"), "tenant-latest", jobs.SourceTenantLatest},
		{"another tenant's policy is no default", []policy.Policy{otherDefault, globalOlder},
			withDefault(noApp(scope), otherDefault.ID), "global-older", jobs.SourceGlobalLatest},
		{"an application-scoped default for another application is skipped", []policy.Policy{appDefault, tenantOlder},
			withDefault(scope, appDefault.ID), "tenant-older", jobs.SourceTenantLatest},
		{"tenant latest is the most recently updated service-level policy", []policy.Policy{tenantOlder, tenantLatest, tenantOtherApp, tenantOtherSvc, globalLatest},
			noApp(scope), "tenant-latest", jobs.SourceTenantLatest},
		{"tenant latest skips application policies", []policy.Policy{tenantOtherApp, globalOlder},
			scope, "global-older", jobs.SourceGlobalLatest},
		{"legacy all-services policy counts as service level", []policy.Policy{legacyAll, tenantLatest},
			noApp(scope), "legacy-all", jobs.SourceTenantLatest},
		{"legacy multi-service policy covers its services", []policy.Policy{legacyTwo, tenantOtherSvc, legacyAll},
			policy.Scope{Tenant: "acme", Service: llm}, "legacy-two", jobs.SourceTenantLatest},
		{"legacy multi-service policy not covering the service is skipped", []policy.Policy{legacyTwo, globalLatest},
			noApp(scope), "global-latest", jobs.SourceGlobalLatest},
		{"another tenant's policies never match", []policy.Policy{otherTenant, globalOlder},
			noApp(scope), "global-older", jobs.SourceGlobalLatest},
		{"global latest is the most recently updated gateway-wide policy", []policy.Policy{globalOlder, globalLegacyAll, globalLatest},
			noApp(scope), "global-legacy-all", jobs.SourceGlobalLatest},
		{"a tenant-less scope only gets gateway-wide policies", []policy.Policy{tenantLatest, globalOlder},
			policy.Scope{Service: tr}, "global-older", jobs.SourceGlobalLatest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, source, ok := policy.Resolve(tc.candidates, tc.scope)
			require.True(t, ok)
			require.Equal(t, tc.wantID, got.ID)
			require.Equal(t, tc.wantSource, source)
		})
	}

	t.Run("none", func(t *testing.T) {
		t.Parallel()
		for _, candidates := range [][]policy.Policy{nil, {otherTenant, tenantOtherSvc, tenantOtherApp, defaultForTL}} {
			got, source, ok := policy.Resolve(candidates, withDefault(scope, defaultForTL.ID))
			require.False(t, ok)
			require.Equal(t, jobs.SourceNone, source)
			require.Zero(t, got.ID)
		}
	})

	t.Run("ties on updated_at go to the later id", func(t *testing.T) {
		t.Parallel()
		a, b := pol("0190a", "acme", "", 1, tr), pol("0190b", "acme", "", 1, tr)
		got, _, ok := policy.Resolve([]policy.Policy{b, a}, noApp(scope))
		require.True(t, ok)
		require.Equal(t, "0190b", got.ID)
	})
}

func TestResolveScoped(t *testing.T) {
	t.Parallel()
	var (
		exact        = pol("exact", "acme", "mobile", 1, tr)
		exactNewer   = pol("exact-newer", "acme", "mobile", 2, tr)
		tenantSvc    = pol("tenant-service", "acme", "", 9, tr) // not part of the chain
		otherApp     = pol("tenant-web", "acme", "web", 9, tr)
		otherTenant  = pol("globex-mobile", "globex", "mobile", 9, tr)
		globalApp    = pol("global-app", "", "mobile", 3, tr)
		globalAppTL  = pol("global-app-translations", "", "mobile", 9, tl)
		globalSvc    = pol("global-service", "", "", 4, tr)
		globalLegacy = pol("global-legacy", "", "", 5, tr, tl)
		globalTL     = pol("global-translations", "", "", 9, tl)
	)
	tests := []struct {
		name       string
		candidates []policy.Policy
		wantID     string
		wantSource policy.ScopedSource
	}{
		{"tenant-specific match first", []policy.Policy{globalSvc, globalApp, exact, otherTenant}, "exact", policy.ScopedTenant},
		{"newest exact record", []policy.Policy{exact, exactNewer}, "exact-newer", policy.ScopedTenant},
		{"then the global application default", []policy.Policy{globalSvc, globalApp, tenantSvc, otherApp, otherTenant, globalAppTL}, "global-app", policy.ScopedGlobalApplication},
		{"then the global service default", []policy.Policy{globalSvc, tenantSvc, otherApp, globalTL}, "global-service", policy.ScopedGlobalServiceLevel},
		{"a legacy gateway-wide policy covering the service counts", []policy.Policy{globalSvc, globalLegacy}, "global-legacy", policy.ScopedGlobalServiceLevel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, source, ok := policy.ResolveScoped(tc.candidates, "acme", tr, "mobile")
			require.True(t, ok)
			require.Equal(t, tc.wantID, got.ID)
			require.Equal(t, tc.wantSource, source)
		})
	}
	t.Run("nothing in the chain", func(t *testing.T) {
		t.Parallel()
		_, _, ok := policy.ResolveScoped([]policy.Policy{tenantSvc, otherApp, otherTenant, globalAppTL, globalTL}, "acme", tr, "mobile")
		require.False(t, ok)
	})
}

func TestIsExactScope(t *testing.T) {
	t.Parallel()
	require.True(t, policy.IsExactScope(pol("p", "acme", "mobile", 0, tr), "acme", tr, "mobile"))
	require.False(t, policy.IsExactScope(pol("p", "acme", "mobile", 0, tr), "globex", tr, "mobile"))
	require.False(t, policy.IsExactScope(pol("p", "acme", "mobile", 0, tr), "acme", tl, "mobile"))
	require.False(t, policy.IsExactScope(pol("p", "acme", "", 0, tr), "acme", tr, "mobile"))
	require.False(t, policy.IsExactScope(pol("p", "acme", "mobile", 0), "acme", tr, "mobile"), "an all-services policy is no exact record")
	require.False(t, policy.IsExactScope(pol("p", "acme", "mobile", 0, tr, tl), "acme", tr, "mobile"))
}
