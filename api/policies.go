package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
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
	RoutingPolicies(ctx context.Context, tenant string, service providers.ServiceID) ([]policy.Policy, error)
}

// Policy scopes (docs/api.md, Policies).
const (
	scopePoliciesRead  = "policies:read"
	scopePoliciesWrite = "policies:write"
)

// policyRoutes registers the policy operations on the authenticated /v1
// group. The scoped routes sit under /services/:id because gin needs the
// same wildcard name as GET /v1/services/:id at that position.
func (s *Server) policyRoutes(v1 *gin.RouterGroup) {
	read, write := auth.RequireScope(scopePoliciesRead), auth.RequireScope(scopePoliciesWrite)
	v1.GET("/policies", read, s.listPolicies)
	v1.POST("/policies", write, s.createPolicy)
	v1.GET("/policies/:id", read, s.getPolicy)
	v1.PUT("/policies/:id", write, s.writePolicy(true))
	v1.PATCH("/policies/:id", write, s.writePolicy(false))
	v1.DELETE("/policies/:id", write, s.deletePolicy)
	v1.GET("/policies/:id/versions", read, s.listPolicyVersions)
	v1.GET("/policies/:id/versions/:version", read, s.getPolicyVersion)

	v1.GET("/services/:id/applications/:app/policy", read, s.getScopedPolicy)
	v1.PUT("/services/:id/applications/:app/policy", write, s.putScopedPolicy)
	v1.DELETE("/services/:id/applications/:app/policy", write, s.deleteScopedPolicy)
}

// policies is the policy store.
func (s *Server) policies() PolicyStore { return s.cfg.Policies }

// --- who may do what -------------------------------------------------------

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
func (a policyActor) canModify(p policy.Policy) *apierror.Error {
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
func (a policyActor) tenantForCreate(given nullable[string]) (string, *apierror.Error) {
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
func (a policyActor) tenantForUpdate(current policy.Policy, given nullable[string]) (string, *apierror.Error) {
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

// validPolicyTenant checks a tenant an administrator names: a tenant slug,
// which has the same pattern as an X-Application slug.
func validPolicyTenant(tenant string) *apierror.Error {
	if !applicationPattern.MatchString(tenant) {
		return apierror.Validation(ptrAttributes+"/tenant", "must be a tenant slug of 2 to 63 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen, or null")
	}
	return nil
}

func policyNotFound(id string) *apierror.Error { return apierror.NotFound("no policy with id %s", id) }

// visiblePolicy loads the policy named by the path as the actor may see
// it: a malformed id, an unknown one and another tenant's are all 404.
func (s *Server) visiblePolicy(c *gin.Context, actor policyActor) (policy.Policy, error) {
	id, ok := policyPathID(c)
	if !ok {
		return policy.Policy{}, policyNotFound(c.Param("id"))
	}
	p, err := s.cfg.Policies.GetPolicy(c.Request.Context(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !actor.canSee(p)) {
		return policy.Policy{}, policyNotFound(id)
	}
	return p, err
}

// policyPathID is the path's policy id, lowercased; ok is false when it is
// not a UUID.
func policyPathID(c *gin.Context) (string, bool) {
	id := c.Param("id")
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return "", false
	}
	return strings.ToLower(id), true
}

// --- handlers ----------------------------------------------------------------

// listPolicies handles GET /v1/policies. A confined caller sees its own
// tenant's and the gateway-wide policies and may not set filter[tenant];
// with admin:cross-tenant no filter lists every policy, filter[tenant]
// that tenant's only.
func (s *Server) listPolicies(c *gin.Context) {
	actor, err := policyActorOf(c)
	if err != nil {
		abort(c, err)
		return
	}
	filterTenant, filtered := c.GetQuery("filter[tenant]")
	if filtered && !actor.crossTenant {
		abort(c, apierror.Forbidden("filter[tenant] needs the %s scope; without it the list shows your tenant's and the gateway-wide policies", auth.ScopeCrossTenant))
		return
	}
	page, perr := parsePage(c)
	if perr != nil {
		abort(c, perr)
		return
	}
	var f store.PolicyFilter
	switch {
	case filtered:
		if filterTenant == "" {
			abort(c, apierror.New(http.StatusUnprocessableEntity, apierror.CodeValidation, "query filter[tenant]: must be a tenant slug"))
			return
		}
		f = store.PolicyFilter{Tenant: &filterTenant}
	case actor.crossTenant:
		f = store.PolicyFilter{IncludeGlobal: true}
	default:
		own := actor.tenant // "" (no tenant claim): only gateway-wide ones
		f = store.PolicyFilter{Tenant: &own, IncludeGlobal: true}
	}
	list, total, err := s.cfg.Policies.ListPolicies(c.Request.Context(), f, page.Offset(), page.Size)
	if err != nil {
		abort(c, err)
		return
	}
	out := make([]policyResource, 0, len(list))
	for _, p := range list {
		out = append(out, s.policyView(p))
	}
	c.JSON(http.StatusOK, collection(c, out, page, total))
}

// createPolicy handles POST /v1/policies: 201 with version 1.
func (s *Server) createPolicy(c *gin.Context) {
	actor, err := policyActorOf(c)
	if err != nil {
		abort(c, err)
		return
	}
	d, err := s.readPolicyBody(c, idForbidden, "")
	if err != nil {
		abort(c, err)
		return
	}
	tenant, verr := actor.tenantForCreate(d.tenant)
	if verr != nil {
		abort(c, verr)
		return
	}
	p := policy.Policy{Tenant: tenant}
	if verr := s.applyPolicyDraft(&p, d, true); verr != nil {
		abort(c, verr)
		return
	}
	created, err := s.cfg.Policies.CreatePolicy(c.Request.Context(), p)
	if err != nil {
		abort(c, err)
		return
	}
	c.Header("Location", "/v1/policies/"+created.ID)
	c.JSON(http.StatusCreated, gin.H{"data": s.policyView(created)})
}

// getPolicy handles GET /v1/policies/:id: the current version.
func (s *Server) getPolicy(c *gin.Context) {
	actor, err := policyActorOf(c)
	if err != nil {
		abort(c, err)
		return
	}
	p, err := s.visiblePolicy(c, actor)
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"data": s.policyView(p)})
}

// writePolicy handles PUT (replace: every writable field as on create) and
// PATCH (only the given members change; a given providers list replaces
// the whole list) of /v1/policies/:id. Both store version + 1.
func (s *Server) writePolicy(replace bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		actor, err := policyActorOf(c)
		if err != nil {
			abort(c, err)
			return
		}
		// Answer 404 and 403 before looking at the body.
		current, err := s.visiblePolicy(c, actor)
		if err != nil {
			abort(c, err)
			return
		}
		if verr := actor.canModify(current); verr != nil {
			abort(c, verr)
			return
		}
		d, err := s.readPolicyBody(c, idRequired, current.ID)
		if err != nil {
			abort(c, err)
			return
		}
		updated, err := s.cfg.Policies.UpdatePolicy(c.Request.Context(), current.ID, func(p policy.Policy) (policy.Policy, error) {
			// Checked again under the row lock: the policy may have moved.
			if !actor.canSee(p) {
				return p, policyNotFound(p.ID)
			}
			if verr := actor.canModify(p); verr != nil {
				return p, verr
			}
			tenant, verr := actor.tenantForUpdate(p, d.tenant)
			if verr != nil {
				return p, verr
			}
			p.Tenant = tenant
			if verr := s.applyPolicyDraft(&p, d, replace); verr != nil {
				return p, verr
			}
			return p, nil
		})
		if errors.Is(err, store.ErrNotFound) {
			err = policyNotFound(current.ID)
		}
		if err != nil {
			abort(c, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"data": s.policyView(updated)})
	}
}

// deletePolicy handles DELETE /v1/policies/:id: 204. The versions stay
// readable under /versions.
func (s *Server) deletePolicy(c *gin.Context) {
	actor, err := policyActorOf(c)
	if err != nil {
		abort(c, err)
		return
	}
	p, err := s.visiblePolicy(c, actor)
	if err != nil {
		abort(c, err)
		return
	}
	if verr := actor.canModify(p); verr != nil {
		abort(c, verr)
		return
	}
	err = s.cfg.Policies.DeletePolicy(c.Request.Context(), p.ID)
	if errors.Is(err, store.ErrNotFound) {
		err = policyNotFound(p.ID)
	}
	if err != nil {
		abort(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// visibleVersions loads every version of the policy named by the path,
// oldest first, also of a deleted policy. Who may read them follows the
// latest version's owner.
func (s *Server) visibleVersions(c *gin.Context) ([]policy.Policy, error) {
	actor, err := policyActorOf(c)
	if err != nil {
		return nil, err
	}
	id, ok := policyPathID(c)
	if !ok {
		return nil, policyNotFound(c.Param("id"))
	}
	versions, err := s.cfg.Policies.ListPolicyVersions(c.Request.Context(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (len(versions) == 0 || !actor.canSee(versions[len(versions)-1]))) {
		return nil, policyNotFound(id)
	}
	return versions, err
}

// listPolicyVersions handles GET /v1/policies/:id/versions: every version,
// newest first, paginated.
func (s *Server) listPolicyVersions(c *gin.Context) {
	versions, err := s.visibleVersions(c)
	if err != nil {
		abort(c, err)
		return
	}
	page, perr := parsePage(c)
	if perr != nil {
		abort(c, perr)
		return
	}
	slices.Reverse(versions)
	out := make([]policyResource, 0, page.Size)
	for i := page.Offset(); i < len(versions) && len(out) < page.Size; i++ {
		out = append(out, s.policyView(versions[i]))
	}
	c.JSON(http.StatusOK, collection(c, out, page, int64(len(versions))))
}

// getPolicyVersion handles GET /v1/policies/:id/versions/:version.
func (s *Server) getPolicyVersion(c *gin.Context) {
	versions, err := s.visibleVersions(c)
	if err != nil {
		abort(c, err)
		return
	}
	n, err := strconv.Atoi(c.Param("version"))
	if err != nil || n < 1 || n > len(versions) || versions[n-1].Version != n {
		abort(c, apierror.NotFound("policy %s has no version %s", versions[0].ID, c.Param("version")))
		return
	}
	c.JSON(http.StatusOK, gin.H{"data": s.policyView(versions[n-1])})
}

// --- scoped policies ---------------------------------------------------------

// policyScope is the (tenant, service, application) of a scoped-policy
// request.
type policyScope struct {
	tenant      string
	service     providers.ServiceID
	application string
}

// scopeOf reads the scope of /v1/services/:id/applications/:app/policy.
// The tenant is the token's tenant_id claim and nothing else: a request
// with X-Effective-Tenant-Id or filter[tenant] is 403, and so is a token
// without the claim. An unknown service is 404; a malformed application
// slug is 404 too, or 422 when badAppIs422 (PUT would create it).
func scopeOf(c *gin.Context, badAppIs422 bool) (policyScope, error) {
	if _, _, err := auth.EffectiveIdentity(c); err != nil {
		return policyScope{}, err
	}
	if strings.TrimSpace(c.GetHeader(auth.HeaderEffectiveTenant)) != "" {
		return policyScope{}, apierror.Forbidden("scoped policies belong to the token's tenant; %s cannot replace it", auth.HeaderEffectiveTenant)
	}
	if _, ok := c.GetQuery("filter[tenant]"); ok {
		return policyScope{}, apierror.Forbidden("scoped policies belong to the token's tenant; filter[tenant] cannot replace it")
	}
	caller := auth.CallerFrom(c)
	if caller.Tenant == "" {
		return policyScope{}, apierror.Forbidden("scoped policies need a token with a tenant_id claim")
	}
	svc, ok := providers.LookupService(c.Param("id"))
	if !ok {
		return policyScope{}, apierror.NotFound("no service %q", c.Param("id"))
	}
	app := c.Param("app")
	if !applicationPattern.MatchString(app) {
		if badAppIs422 {
			return policyScope{}, apierror.New(http.StatusUnprocessableEntity, apierror.CodeValidation,
				"path app: must be 2 to 63 characters of lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen (pattern %s)", applicationPattern)
		}
		return policyScope{}, apierror.NotFound("no application %q", app)
	}
	return policyScope{tenant: caller.Tenant, service: svc.ID, application: app}, nil
}

// exactRecords are the tenant's policies of exactly the scope, newest first.
func (s *Server) exactRecords(ctx context.Context, sc policyScope) ([]policy.Policy, error) {
	candidates, err := s.cfg.Policies.RoutingPolicies(ctx, sc.tenant, sc.service)
	if err != nil {
		return nil, err
	}
	var out []policy.Policy
	for _, p := range candidates {
		if policy.IsExactScope(p, sc.tenant, sc.service, sc.application) {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b policy.Policy) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	return out, nil
}

// getScopedPolicy handles GET /v1/services/:id/applications/:app/policy:
// the tenant's policy for the application, else the gateway-wide one for
// the application, else the gateway-wide service-level one; 404 when none.
// data.meta.resolved_from names the step that matched.
func (s *Server) getScopedPolicy(c *gin.Context) {
	sc, err := scopeOf(c, false)
	if err != nil {
		abort(c, err)
		return
	}
	candidates, err := s.cfg.Policies.RoutingPolicies(c.Request.Context(), sc.tenant, sc.service)
	if err != nil {
		abort(c, err)
		return
	}
	p, source, ok := policy.ResolveScoped(candidates, sc.tenant, sc.service, sc.application)
	if !ok {
		abort(c, apierror.NotFound("no policy applies to application %s of %s for tenant %s", sc.application, sc.service, sc.tenant))
		return
	}
	view := s.policyView(p)
	view.Meta = map[string]any{"resolved_from": source}
	c.JSON(http.StatusOK, gin.H{"data": view})
}

// putScopedPolicy handles PUT /v1/services/:id/applications/:app/policy:
// it replaces the tenant's record of exactly the scope (version + 1) or
// creates it (version 1); 200 either way. The scope comes from the path
// and the token; attributes may repeat it but not change it.
func (s *Server) putScopedPolicy(c *gin.Context) {
	sc, err := scopeOf(c, true)
	if err != nil {
		abort(c, err)
		return
	}
	d, err := s.readPolicyBody(c, idOptional, "")
	if err != nil {
		abort(c, err)
		return
	}
	if verr := d.matchesScope(sc); verr != nil {
		abort(c, verr)
		return
	}
	existing, err := s.exactRecords(c.Request.Context(), sc)
	if err != nil {
		abort(c, err)
		return
	}
	if len(existing) == 0 {
		// A given data.id is ignored: it is typically that of the
		// gateway-wide policy GET resolved to, sent back as a template.
		p := policy.Policy{Tenant: sc.tenant}
		if verr := s.applyPolicyDraft(&p, d, true); verr != nil {
			abort(c, verr)
			return
		}
		created, err := s.cfg.Policies.CreatePolicy(c.Request.Context(), p)
		if err != nil {
			abort(c, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"data": s.policyView(created)})
		return
	}
	target := existing[0]
	if d.id != "" && !strings.EqualFold(d.id, target.ID) {
		abort(c, apierror.Validation(ptrData+"/id", "must be the id of the policy of this scope (%s), not %s", target.ID, d.id))
		return
	}
	updated, err := s.cfg.Policies.UpdatePolicy(c.Request.Context(), target.ID, func(p policy.Policy) (policy.Policy, error) {
		if !policy.IsExactScope(p, sc.tenant, sc.service, sc.application) {
			return p, apierror.New(http.StatusConflict, apierror.CodeConflict, "policy %s changed scope during the request; retry", p.ID)
		}
		if verr := s.applyPolicyDraft(&p, d, true); verr != nil {
			return p, verr
		}
		return p, nil
	})
	if errors.Is(err, store.ErrNotFound) {
		err = apierror.New(http.StatusConflict, apierror.CodeConflict, "policy %s was deleted during the request; retry", target.ID)
	}
	if err != nil {
		abort(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"data": s.policyView(updated)})
}

// deleteScopedPolicy handles DELETE /v1/services/:id/applications/:app/policy:
// it deletes the tenant's record(s) of exactly the scope (204), never a
// gateway-wide fallback; 404 when the tenant has none.
func (s *Server) deleteScopedPolicy(c *gin.Context) {
	sc, err := scopeOf(c, false)
	if err != nil {
		abort(c, err)
		return
	}
	existing, err := s.exactRecords(c.Request.Context(), sc)
	if err != nil {
		abort(c, err)
		return
	}
	if len(existing) == 0 {
		abort(c, apierror.NotFound("tenant %s has no policy for application %s of %s", sc.tenant, sc.application, sc.service))
		return
	}
	for _, p := range existing {
		if err := s.cfg.Policies.DeletePolicy(c.Request.Context(), p.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			abort(c, err)
			return
		}
	}
	c.Status(http.StatusNoContent)
}

// --- representation ----------------------------------------------------------

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
	Tenant          *string                `json:"tenant"`
	Name            string                 `json:"name"`
	Description     string                 `json:"description"`
	Version         int                    `json:"version"`
	RoutingStrategy policy.Strategy        `json:"routing_strategy"`
	Service         any                    `json:"service,omitempty"`
	Services        *[]providers.ServiceID `json:"services,omitempty"`
	Application     any                    `json:"application,omitempty"`
	Providers       []policyProviderView   `json:"providers"`
	CreatedAt       time.Time              `json:"created_at"`
	UpdatedAt       time.Time              `json:"updated_at"`
}

type policyProviderView struct {
	ProviderID   string             `json:"provider_id"`
	ProviderName string             `json:"provider_name"`
	Priority     int                `json:"priority"`
	Weight       int                `json:"weight"`
	Conditions   *policy.Conditions `json:"conditions,omitempty"`
}

func (s *Server) policyView(p policy.Policy) policyResource {
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
		services := append([]providers.ServiceID{}, p.Services...)
		attrs.Services = &services
	}
	entries := slices.Clone(p.Providers)
	slices.SortStableFunc(entries, func(a, b policy.Entry) int { return a.Priority - b.Priority })
	for _, e := range entries {
		name := e.ProviderID // a provider gone from the catalog keeps its id as name
		if cp, ok := s.cfg.Catalog.Lookup(e.ProviderID); ok && cp.Name != "" {
			name = cp.Name
		}
		attrs.Providers = append(attrs.Providers, policyProviderView{
			ProviderID: e.ProviderID, ProviderName: name, Priority: e.Priority, Weight: e.Weight, Conditions: e.Conditions,
		})
	}
	return policyResource{ID: p.ID, Type: "policy", Attributes: attrs}
}
