package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/store"
)

// policyEpoch is the creation time of backdated test policies.
var policyEpoch = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func newPolicy(tenant, application string, services ...jobs.ServiceID) policy.Policy {
	maxSize := 100
	return policy.Policy{
		Tenant:      tenant,
		Name:        "policy of " + tenant,
		Description: "test policy",
		Strategy:    policy.StrategyPrice,
		Services:    services,
		Application: application,
		Providers: []policy.Entry{
			{ProviderID: "alpha", Priority: 1, Weight: 2, Conditions: &policy.Conditions{MaxFileSizeMB: &maxSize, Languages: []string{"en", "de"}}},
			{ProviderID: "narrow", Priority: 2, Weight: 1},
		},
	}
}

// createAt stores p created minutes after policyEpoch.
func createAt(t *testing.T, s *store.Store, p policy.Policy, minutes int) policy.Policy {
	t.Helper()
	p.CreatedAt = policyEpoch.Add(time.Duration(minutes) * time.Minute)
	created, err := s.Routing.CreatePolicy(context.Background(), p)
	require.NoError(t, err)
	return created
}

func ids(policies []policy.Policy) []string {
	out := make([]string, 0, len(policies))
	for _, p := range policies {
		out = append(out, p.ID)
	}
	return out
}

func TestPolicyVersions(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		created, err := s.Routing.CreatePolicy(ctx, newPolicy("acme", "mobile", jobs.Transcriptions))
		require.NoError(t, err)
		require.Equal(t, 1, created.Version)
		_, err = uuid.Parse(created.ID)
		require.NoError(t, err)
		require.Equal(t, uuid.Version(7), uuid.MustParse(created.ID).Version())
		require.Equal(t, created.CreatedAt, created.UpdatedAt)

		got, err := s.Routing.GetPolicy(ctx, created.ID)
		require.NoError(t, err)
		require.Equal(t, created, got, "a policy reads back as it was stored")

		v1, err := s.Routing.GetPolicyVersion(ctx, created.ID, 1)
		require.NoError(t, err)
		require.Equal(t, created, v1)

		// Two updates: each is a new version, created_at stays.
		v2, err := s.Routing.UpdatePolicy(ctx, created.ID, func(p policy.Policy) (policy.Policy, error) {
			require.Equal(t, 1, p.Version)
			p.Name = "second"
			p.Providers = []policy.Entry{{ProviderID: "narrow", Priority: 1, Weight: 1}}
			p.Version = 99 // ignored: the store numbers versions
			return p, nil
		})
		require.NoError(t, err)
		require.Equal(t, 2, v2.Version)
		require.Equal(t, created.CreatedAt, v2.CreatedAt)
		require.True(t, v2.UpdatedAt.After(created.UpdatedAt))

		v3, err := s.Routing.UpdatePolicy(ctx, created.ID, func(p policy.Policy) (policy.Policy, error) {
			p.Name = "third"
			p.Tenant = "" // scope changes are versions too
			p.Application = ""
			p.Services = nil
			return p, nil
		})
		require.NoError(t, err)
		require.Equal(t, 3, v3.Version)

		current, err := s.Routing.GetPolicy(ctx, created.ID)
		require.NoError(t, err)
		require.Equal(t, v3, current)
		require.True(t, current.Global())
		require.Empty(t, current.Services)

		// Earlier versions are unchanged.
		got, err = s.Routing.GetPolicyVersion(ctx, created.ID, 1)
		require.NoError(t, err)
		require.Equal(t, created, got)
		got, err = s.Routing.GetPolicyVersion(ctx, created.ID, 2)
		require.NoError(t, err)
		require.Equal(t, v2, got)
		versions, err := s.Routing.ListPolicyVersions(ctx, created.ID)
		require.NoError(t, err)
		require.Equal(t, []policy.Policy{created, v2, v3}, versions)

		// A failing change writes nothing.
		boom := errors.New("boom")
		_, err = s.Routing.UpdatePolicy(ctx, created.ID, func(p policy.Policy) (policy.Policy, error) { return p, boom })
		require.ErrorIs(t, err, boom)
		current, err = s.Routing.GetPolicy(ctx, created.ID)
		require.NoError(t, err)
		require.Equal(t, 3, current.Version)
		_, err = s.Routing.GetPolicyVersion(ctx, created.ID, 4)
		require.ErrorIs(t, err, store.ErrNotFound)

		// After deletion the versions stay readable.
		require.NoError(t, s.Routing.DeletePolicy(ctx, created.ID))
		_, err = s.Routing.GetPolicy(ctx, created.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		got, err = s.Routing.GetPolicyVersion(ctx, created.ID, 2)
		require.NoError(t, err)
		require.Equal(t, v2, got)
		versions, err = s.Routing.ListPolicyVersions(ctx, created.ID)
		require.NoError(t, err)
		require.Len(t, versions, 3)

		require.ErrorIs(t, s.Routing.DeletePolicy(ctx, created.ID), store.ErrNotFound)
		_, err = s.Routing.UpdatePolicy(ctx, created.ID, func(p policy.Policy) (policy.Policy, error) { return p, nil })
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.Routing.ListPolicyVersions(ctx, uuid.NewString())
		require.ErrorIs(t, err, store.ErrNotFound)

		// The id of a deleted policy is not reused.
		reuse := newPolicy("acme", "")
		reuse.ID = created.ID
		_, err = s.Routing.CreatePolicy(ctx, reuse)
		require.ErrorIs(t, err, store.ErrConflict)
	})
}

func TestPolicyRoundTripsEveryField(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		for _, p := range []policy.Policy{
			newPolicy("acme", "mobile", jobs.Transcriptions),
			newPolicy("", "", jobs.Translations, jobs.LLMTasks), // legacy multi-service, gateway-wide
			newPolicy("acme", ""),                               // every service
			{Name: "empty", Strategy: policy.StrategyRoundRobin, Providers: []policy.Entry{}},
		} {
			p.CreatedAt = policyEpoch
			created, err := s.Routing.CreatePolicy(ctx, p)
			require.NoError(t, err)
			p.ID, p.Version, p.UpdatedAt = created.ID, 1, policyEpoch
			if len(p.Services) == 0 {
				p.Services = nil
			}
			require.Equal(t, p, created)
			got, err := s.Routing.GetPolicy(ctx, created.ID)
			require.NoError(t, err)
			require.Equal(t, p, got)
			version, err := s.Routing.GetPolicyVersion(ctx, created.ID, 1)
			require.NoError(t, err)
			require.Equal(t, p, version)
		}
	})
}

func TestConcurrentPolicyUpdates(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		created, err := s.Routing.CreatePolicy(ctx, newPolicy("acme", "", jobs.Transcriptions))
		require.NoError(t, err)

		const writers = 12
		versions := make(chan int, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				p, err := s.Routing.UpdatePolicy(ctx, created.ID, func(p policy.Policy) (policy.Policy, error) {
					p.Name = "writer " + string(rune('a'+i))
					return p, nil
				})
				if err != nil {
					t.Errorf("update: %v", err)
					return
				}
				versions <- p.Version
			})
		}
		wg.Wait()
		close(versions)
		var got []int
		for v := range versions {
			got = append(got, v)
		}
		slices.Sort(got)
		want := make([]int, 0, writers)
		for v := 2; v <= writers+1; v++ {
			want = append(want, v)
		}
		require.Equal(t, want, got, "every update got its own consecutive version")

		all, err := s.Routing.ListPolicyVersions(ctx, created.ID)
		require.NoError(t, err)
		require.Len(t, all, writers+1)
		for i, p := range all {
			require.Equal(t, i+1, p.Version)
			if i > 0 {
				require.True(t, p.UpdatedAt.After(all[i-1].UpdatedAt), "updated_at increases with the version")
			}
		}
		current, err := s.Routing.GetPolicy(ctx, created.ID)
		require.NoError(t, err)
		require.Equal(t, writers+1, current.Version)
		require.Equal(t, all[writers], current)
	})
}

func TestListPolicies(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		acmeOld := createAt(t, s, newPolicy("acme", "", jobs.Transcriptions), 1)
		global := createAt(t, s, newPolicy("", "", jobs.Transcriptions), 2)
		globex := createAt(t, s, newPolicy("globex", ""), 3)
		acmeNew := createAt(t, s, newPolicy("acme", "mobile", jobs.Transcriptions), 4)
		globalLegacy := createAt(t, s, newPolicy("", ""), 5)

		list := func(f store.PolicyFilter, offset, limit int) ([]string, int64) {
			t.Helper()
			got, total, err := s.Routing.ListPolicies(ctx, f, offset, limit)
			require.NoError(t, err)
			return ids(got), total
		}
		acme, empty := "acme", ""

		got, total := list(store.PolicyFilter{IncludeGlobal: true}, 0, 10)
		require.Equal(t, []string{globalLegacy.ID, acmeNew.ID, globex.ID, global.ID, acmeOld.ID}, got, "newest first")
		require.EqualValues(t, 5, total)

		got, total = list(store.PolicyFilter{}, 0, 10)
		require.Equal(t, []string{acmeNew.ID, globex.ID, acmeOld.ID}, got, "every tenant's, no gateway-wide ones")
		require.EqualValues(t, 3, total)

		got, total = list(store.PolicyFilter{Tenant: &acme, IncludeGlobal: true}, 0, 10)
		require.Equal(t, []string{globalLegacy.ID, acmeNew.ID, global.ID, acmeOld.ID}, got)
		require.EqualValues(t, 4, total)

		got, total = list(store.PolicyFilter{Tenant: &acme}, 0, 10)
		require.Equal(t, []string{acmeNew.ID, acmeOld.ID}, got)
		require.EqualValues(t, 2, total)

		got, total = list(store.PolicyFilter{Tenant: &empty, IncludeGlobal: true}, 0, 10)
		require.Equal(t, []string{globalLegacy.ID, global.ID}, got, "only gateway-wide ones")
		require.EqualValues(t, 2, total)

		// Pages.
		got, total = list(store.PolicyFilter{IncludeGlobal: true}, 2, 2)
		require.Equal(t, []string{globex.ID, global.ID}, got)
		require.EqualValues(t, 5, total)
		got, total = list(store.PolicyFilter{IncludeGlobal: true}, 10, 2)
		require.Empty(t, got)
		require.EqualValues(t, 5, total)

		// An update moves a policy to the front.
		_, err := s.Routing.UpdatePolicy(ctx, acmeOld.ID, func(p policy.Policy) (policy.Policy, error) { return p, nil })
		require.NoError(t, err)
		got, _ = list(store.PolicyFilter{Tenant: &acme}, 0, 10)
		require.Equal(t, []string{acmeOld.ID, acmeNew.ID}, got)

		// Deleted policies are gone from the list.
		require.NoError(t, s.Routing.DeletePolicy(ctx, acmeNew.ID))
		got, total = list(store.PolicyFilter{Tenant: &acme}, 0, 10)
		require.Equal(t, []string{acmeOld.ID}, got)
		require.EqualValues(t, 1, total)
	})
}

func TestRoutingPolicies(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		acmeTr := createAt(t, s, newPolicy("acme", "", jobs.Transcriptions), 1)
		acmeApp := createAt(t, s, newPolicy("acme", "mobile", jobs.Transcriptions), 2)
		acmeTl := createAt(t, s, newPolicy("acme", "", jobs.Translations), 3)
		acmeAll := createAt(t, s, newPolicy("acme", ""), 4)
		acmeLegacy := createAt(t, s, newPolicy("acme", "", jobs.Translations, jobs.Transcriptions), 5)
		globalTr := createAt(t, s, newPolicy("", "", jobs.Transcriptions), 6)
		globalAll := createAt(t, s, newPolicy("", ""), 7)
		globalLLM := createAt(t, s, newPolicy("", "", jobs.LLMTasks), 8)
		createAt(t, s, newPolicy("globex", "", jobs.Transcriptions), 9)

		got, err := s.Routing.RoutingPolicies(ctx, "acme", jobs.Transcriptions)
		require.NoError(t, err)
		require.Equal(t, []string{globalAll.ID, globalTr.ID, acmeLegacy.ID, acmeAll.ID, acmeApp.ID, acmeTr.ID}, ids(got))

		got, err = s.Routing.RoutingPolicies(ctx, "acme", jobs.LLMTasks)
		require.NoError(t, err)
		require.Equal(t, []string{globalLLM.ID, globalAll.ID, acmeAll.ID}, ids(got))

		got, err = s.Routing.RoutingPolicies(ctx, "initech", jobs.Translations)
		require.NoError(t, err)
		require.Equal(t, []string{globalAll.ID}, ids(got), "a tenant without policies gets the gateway-wide ones")

		got, err = s.Routing.RoutingPolicies(ctx, "", jobs.Transcriptions)
		require.NoError(t, err)
		require.Equal(t, []string{globalAll.ID, globalTr.ID}, ids(got))

		// The candidates resolve as docs/routing.md (Which policy applies)
		// says.
		candidates, err := s.Routing.RoutingPolicies(ctx, "acme", jobs.Transcriptions)
		require.NoError(t, err)
		p, source, ok := policy.Resolve(candidates, policy.Scope{Tenant: "acme", Service: jobs.Transcriptions, Application: "mobile"})
		require.True(t, ok)
		require.Equal(t, acmeApp.ID, p.ID)
		require.Equal(t, jobs.SourceTenantApplication, source)
		p, source, ok = policy.Resolve(candidates, policy.Scope{Tenant: "acme", Service: jobs.Transcriptions, TenantDefaultPolicyID: acmeTl.ID})
		require.True(t, ok, "the translations default does not cover transcriptions")
		require.Equal(t, acmeLegacy.ID, p.ID)
		require.Equal(t, jobs.SourceTenantLatest, source)
	})
}
