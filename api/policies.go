package api

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/store"
)

// PolicyStore keeps routing policies and their versions.
type PolicyStore interface {
	CreatePolicy(ctx context.Context, p policy.Policy) (policy.Policy, error)
	UpdatePolicy(ctx context.Context, id string, change func(current policy.Policy) (policy.Policy, error)) (policy.Policy, error)
	GetPolicy(ctx context.Context, id string) (policy.Policy, error)
	ListPolicyVersions(ctx context.Context, id string) ([]policy.Policy, error)
	ListPolicies(ctx context.Context, f store.PolicyFilter, offset, limit int) ([]policy.Policy, int64, error)
	DeletePolicy(ctx context.Context, id string) error
	RoutingPolicies(ctx context.Context, tenant string, service jobs.ServiceID) ([]policy.Policy, error)
}

// Policy scopes (docs/api.md, Policies).
const (
	scopePoliciesRead  = "policies:read"
	scopePoliciesWrite = "policies:write"
)

// policyRoutes registers the policy operations on the authenticated /v1
// group. The scoped routes sit under /services/:id because gin needs the
// same wildcard name as GET /v1/services/:id at that position.
func policyRoutes(v1 *gin.RouterGroup, byID policiesHandler, scoped scopedPolicies) {
	read, write := auth.RequireScope(scopePoliciesRead), auth.RequireScope(scopePoliciesWrite)
	v1.GET("/policies", read, handle(byID.list))
	v1.POST("/policies", write, handle(byID.create))
	v1.GET("/policies/:id", read, handle(byID.get))
	v1.PUT("/policies/:id", write, byID.write(true))
	v1.PATCH("/policies/:id", write, byID.write(false))
	v1.DELETE("/policies/:id", write, handle(byID.delete))
	v1.GET("/policies/:id/versions", read, handle(byID.listVersions))
	v1.GET("/policies/:id/versions/:version", read, handle(byID.getVersion))

	v1.GET("/services/:id/applications/:app/policy", read, handle(scoped.get))
	v1.PUT("/services/:id/applications/:app/policy", write, handle(scoped.put))
	v1.DELETE("/services/:id/applications/:app/policy", write, handle(scoped.delete))
}

// policyWriter creates, changes and deletes policies.
type policyWriter interface {
	CreatePolicy(ctx context.Context, p policy.Policy) (policy.Policy, error)
	UpdatePolicy(ctx context.Context, id string, change func(current policy.Policy) (policy.Policy, error)) (policy.Policy, error)
	DeletePolicy(ctx context.Context, id string) error
}

// policyCodec decodes policy writes and renders policies; the catalog
// checks and names the providers they list (docs/routing.md).
type policyCodec struct {
	catalog providerLookup
}

// policyActor is the caller of a policy operation as confinement sees it
// (docs/api.md, Policies: who sees and changes what).
type policyActor struct {
	// tenant is the tenant a confined caller is confined to: the token's,
	// or X-Effective-Tenant-Id's for a caller with admin:cross-tenant ("" when
	// the token has no tenant_id claim).
	tenant string
	// crossTenant is a caller with admin:cross-tenant not acting as a
	// tenant: it sees and names every tenant.
	crossTenant bool
	// superAdmin may also move an existing policy to another scope.
	superAdmin bool
}

// policyActorOf reads the caller; X-Effective-* headers without
// admin:cross-tenant are 403. An admin acting as a tenant through
// X-Effective-Tenant-Id is confined to that tenant, like a regular caller
// of it.
func policyActorOf(c *gin.Context) (policyActor, error) {
	tenant, _, err := auth.EffectiveIdentity(c)
	if err != nil {
		return policyActor{}, err
	}
	actingAs := strings.TrimSpace(c.GetHeader(auth.HeaderEffectiveTenant)) != ""
	caller := auth.CallerFrom(c)
	crossTenant := caller.CrossTenant() && !actingAs
	return policyActor{tenant: tenant, crossTenant: crossTenant, superAdmin: crossTenant && caller.IsSuperAdmin()}, nil
}

// canSee reports whether the actor may read p: its own tenant's and the
// gateway-wide policies, or every policy with admin:cross-tenant.
func (a policyActor) canSee(p policy.Policy) bool {
	return a.crossTenant || p.Global() || (a.tenant != "" && p.Tenant == a.tenant)
}

// canModify is nil when the actor may change or delete p: a confined caller
// gets 403 for a gateway-wide policy and 404 for another tenant's (which it
// cannot see).
func (a policyActor) canModify(p policy.Policy) error {
	switch {
	case a.crossTenant, a.tenant != "" && p.Tenant == a.tenant:
		return nil
	case p.Global():
		return apierror.Forbidden("policy %s is gateway-wide; changing it needs the %s scope", p.ID, auth.ScopeCrossTenant)
	}
	return policyNotFound(p.ID)
}

// tenantForCreate is the owner of a new policy: a confined caller's own
// tenant (omitted or named); with admin:cross-tenant any tenant, and null
// or omitted means gateway-wide.
func (a policyActor) tenantForCreate(given nullable[string]) (string, error) {
	if a.crossTenant {
		if !given.present() {
			return "", nil
		}
		return given.value, validPolicyTenant(given.value)
	}
	if a.tenant == "" {
		return "", apierror.Forbidden("the token carries no tenant_id claim: only callers with the %s scope create gateway-wide policies", auth.ScopeCrossTenant)
	}
	if given.set && given.null {
		return "", apierror.Forbidden("%s/tenant: a gateway-wide policy (null) needs the %s scope", ptrAttributes, auth.ScopeCrossTenant)
	}
	if given.set && given.value != a.tenant {
		return "", apierror.Forbidden("%s/tenant: naming a tenant other than the token's (%s) needs the %s scope", ptrAttributes, a.tenant, auth.ScopeCrossTenant)
	}
	return a.tenant, nil
}

// tenantForUpdate is the owner after a replace or partial update: omitted
// keeps the current owner; changing it (to another tenant or to null, i.e.
// gateway-wide) is for super-admins with admin:cross-tenant (docs/api.md,
// Policies: changing a policy's owner).
func (a policyActor) tenantForUpdate(current policy.Policy, given nullable[string]) (string, error) {
	if !given.set {
		return current.Tenant, nil
	}
	tenant := ""
	if !given.null {
		tenant = given.value
	}
	if tenant == current.Tenant {
		return tenant, nil
	}
	if !a.superAdmin {
		return "", apierror.Forbidden("%s/tenant: moving a policy to another tenant or making it gateway-wide is for super-admins with the %s scope", ptrAttributes, auth.ScopeCrossTenant)
	}
	if tenant == "" {
		return "", nil
	}
	return tenant, validPolicyTenant(tenant)
}

// validPolicyTenant checks a tenant an administrator names: a tenant slug
// (auth.SlugPattern).
func validPolicyTenant(tenant string) error {
	if !auth.SlugPattern.MatchString(tenant) {
		return apierror.Validation(ptrAttributes+"/tenant", "must be a tenant slug of 2 to 63 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen, or null")
	}
	return nil
}

func policyNotFound(id string) error { return apierror.NotFound("no policy with id %s", id) }

// policyResource is the representation of one policy version.
type policyResource struct {
	ID         string           `json:"id"`
	Type       string           `json:"type"`
	Attributes policyAttributes `json:"attributes"`
	Meta       map[string]any   `json:"meta,omitempty"`
}

// policyAttributes are a policy's attributes. A policy of the earlier form
// that covers several or all ([]) services carries services in place of
// service and application (docs/api.md, Policies); the current form
// carries service and application (null at service level) and no services.
type policyAttributes struct {
	Tenant          *string              `json:"tenant"`
	Name            string               `json:"name"`
	Description     string               `json:"description"`
	Version         int                  `json:"version"`
	RoutingStrategy policy.Strategy      `json:"routing_strategy"`
	Service         any                  `json:"service,omitempty"`
	Services        *[]jobs.ServiceID    `json:"services,omitempty"`
	Application     any                  `json:"application,omitempty"`
	Providers       []policyProviderView `json:"providers"`
	CreatedAt       time.Time            `json:"created_at"`
	UpdatedAt       time.Time            `json:"updated_at"`
}

type policyProviderView struct {
	ProviderID   string             `json:"provider_id"`
	ProviderName string             `json:"provider_name"`
	Priority     int                `json:"priority"`
	Weight       int                `json:"weight"`
	Conditions   *policy.Conditions `json:"conditions,omitempty"`
}

// policyView renders one policy version.
func (pc policyCodec) policyView(p policy.Policy) policyResource {
	attrs := policyAttributes{
		Name:            p.Name,
		Description:     p.Description,
		Version:         p.Version,
		RoutingStrategy: p.Strategy,
		Providers:       make([]policyProviderView, 0, len(p.Providers)),
		CreatedAt:       p.CreatedAt.UTC(),
		UpdatedAt:       p.UpdatedAt.UTC(),
	}
	if p.Tenant != "" {
		attrs.Tenant = &p.Tenant
	}
	if len(p.Services) == 1 {
		attrs.Service = p.Services[0]
		attrs.Application = json.RawMessage("null")
		if p.Application != "" {
			attrs.Application = p.Application
		}
	} else {
		services := append([]jobs.ServiceID{}, p.Services...)
		attrs.Services = &services
	}
	entries := slices.Clone(p.Providers)
	slices.SortStableFunc(entries, func(a, b policy.Entry) int { return a.Priority - b.Priority })
	for _, e := range entries {
		name := e.ProviderID // a provider gone from the catalog keeps its id as name
		if cp, ok := pc.catalog.Lookup(e.ProviderID); ok && cp.Name != "" {
			name = cp.Name
		}
		attrs.Providers = append(attrs.Providers, policyProviderView{
			ProviderID: e.ProviderID, ProviderName: name, Priority: e.Priority, Weight: e.Weight, Conditions: e.Conditions,
		})
	}
	return policyResource{ID: p.ID, Type: "policy", Attributes: attrs}
}
