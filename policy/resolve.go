package policy

import (
	"cmp"
	"slices"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// Scope is what resolving a job's policy depends on: who submitted it, for
// which service and application, and the tenant's default policy.
type Scope struct {
	Tenant      string
	Application string // X-Application; "" skips application-scoped policies
	Service     jobs.ServiceID
	// TenantDefaultPolicyID is the tenant record's default_policy_id, if any.
	TenantDefaultPolicyID string
}

// Resolve picks the policy for a job that names no provider and no
// policy_id (docs/routing.md, Which policy applies), first match wins:
// tenant_application → global_application → tenant_default (when it covers
// the service) → tenant_latest (the tenant's most recently updated
// service-level policy for the service) → global_latest (same,
// gateway-wide). ok is false when none
// applies (source none). Candidates may come in any order and may include
// policies of other tenants or services; those are ignored. The explicit_id
// source is the caller's: a given policy_id is looked up directly.
func Resolve(candidates []Policy, scope Scope) (Policy, jobs.Source, bool) {
	ordered := newestFirst(candidates, scope.Service)
	if scope.Application != "" {
		if p, ok := first(ordered, func(p Policy) bool { return ownedBy(p, scope.Tenant) && p.Application == scope.Application }); ok {
			return p, jobs.SourceTenantApplication, true
		}
		if p, ok := first(ordered, func(p Policy) bool { return p.Global() && p.Application == scope.Application }); ok {
			return p, jobs.SourceGlobalApplication, true
		}
	}
	if scope.TenantDefaultPolicyID != "" {
		// The default may be the tenant's own policy or a gateway-wide one
		// (a template). An application-scoped default only applies to its
		// application, which the two steps above have already matched.
		if p, ok := first(ordered, func(p Policy) bool {
			return p.ID == scope.TenantDefaultPolicyID && (p.Global() || ownedBy(p, scope.Tenant)) &&
				(p.Application == "" || p.Application == scope.Application)
		}); ok {
			return p, jobs.SourceTenantDefault, true
		}
	}
	if p, ok := first(ordered, func(p Policy) bool { return ownedBy(p, scope.Tenant) && p.Application == "" }); ok {
		return p, jobs.SourceTenantLatest, true
	}
	if p, ok := first(ordered, func(p Policy) bool { return p.Global() && p.Application == "" }); ok {
		return p, jobs.SourceGlobalLatest, true
	}
	return Policy{}, jobs.SourceNone, false
}

// ScopedSource says which step of the scoped-policy fallback chain matched.
type ScopedSource string

// Steps of the scoped-policy fallback chain, in order.
const (
	ScopedTenant             ScopedSource = "tenant"
	ScopedGlobalApplication  ScopedSource = "global_application"
	ScopedGlobalServiceLevel ScopedSource = "global_service"
)

// ResolveScoped resolves the policy of one (tenant, service, application)
// scope, as GET /v1/services/{service}/applications/{app}/policy shows it:
// the tenant's policy for exactly that application, then the gateway-wide
// policy for the application, then the gateway-wide service-level policy
// covering the service (the earlier multi-service form included); the most
// recently updated wins at each step.
func ResolveScoped(candidates []Policy, tenant string, service jobs.ServiceID, application string) (Policy, ScopedSource, bool) {
	ordered := newestFirst(candidates, service)
	if p, ok := first(ordered, func(p Policy) bool { return IsExactScope(p, tenant, service, application) }); ok {
		return p, ScopedTenant, true
	}
	if p, ok := first(ordered, func(p Policy) bool { return IsExactScope(p, "", service, application) }); ok {
		return p, ScopedGlobalApplication, true
	}
	if p, ok := first(ordered, func(p Policy) bool { return p.Global() && p.Application == "" }); ok {
		return p, ScopedGlobalServiceLevel, true
	}
	return Policy{}, "", false
}

// IsExactScope reports whether p is the record of exactly this scope: owned
// by tenant ("" for gateway-wide), for the one service, scoped to
// application.
func IsExactScope(p Policy, tenant string, service jobs.ServiceID, application string) bool {
	return p.Tenant == tenant && p.Application == application &&
		len(p.Services) == 1 && p.Services[0] == service
}

// ownedBy reports whether p belongs to tenant; a tenant-less scope owns
// nothing (gateway-wide policies are matched by the global steps).
func ownedBy(p Policy, tenant string) bool { return tenant != "" && p.Tenant == tenant }

// newestFirst keeps the candidates covering service, most recently updated
// first (ties: the larger id, i.e. the later created UUIDv7).
func newestFirst(candidates []Policy, service jobs.ServiceID) []Policy {
	out := make([]Policy, 0, len(candidates))
	for _, p := range candidates {
		if p.Covers(service) {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b Policy) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out
}

func first(policies []Policy, match func(Policy) bool) (Policy, bool) {
	for _, p := range policies {
		if match(p) {
			return p, true
		}
	}
	return Policy{}, false
}
