package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/store"
)

// scopedPolicyRecords is what the scoped-policy operations read and write.
type scopedPolicyRecords interface {
	policyWriter
	RoutingPolicies(ctx context.Context, tenant string, service jobs.ServiceID) ([]policy.Policy, error)
}

// scopedPolicies serves the policy of one application of a service,
// /v1/services/{service}/applications/{app}/policy, for the token's tenant
// (docs/api.md, Policies).
type scopedPolicies struct {
	policies scopedPolicyRecords
	codec    policyCodec
}

// policyScope is the (tenant, service, application) of a scoped-policy
// request.
type policyScope struct {
	tenant      string
	service     jobs.ServiceID
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
	svc, ok := jobs.LookupService(c.Param("id"))
	if !ok {
		return policyScope{}, apierror.NotFound("no service %q", c.Param("id"))
	}
	app := c.Param("app")
	if !auth.SlugPattern.MatchString(app) {
		if badAppIs422 {
			return policyScope{}, apierror.New(http.StatusUnprocessableEntity, apierror.CodeValidation,
				"path app: must be 2 to 63 characters of lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen (pattern %s)", auth.SlugPattern)
		}
		return policyScope{}, apierror.NotFound("no application %q", app)
	}
	return policyScope{tenant: caller.Tenant, service: svc.ID, application: app}, nil
}

// exactRecords are the tenant's policies of exactly the scope, newest first.
func (h scopedPolicies) exactRecords(ctx context.Context, sc policyScope) ([]policy.Policy, error) {
	candidates, err := h.policies.RoutingPolicies(ctx, sc.tenant, sc.service)
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

// get handles GET /v1/services/:id/applications/:app/policy:
// the tenant's policy for the application, else the gateway-wide one for
// the application, else the gateway-wide service-level one; 404 when none.
// data.meta.resolved_from names the step that matched.
func (h scopedPolicies) get(c *gin.Context) error {
	sc, err := scopeOf(c, false)
	if err != nil {
		return err
	}
	candidates, err := h.policies.RoutingPolicies(c.Request.Context(), sc.tenant, sc.service)
	if err != nil {
		return err
	}
	p, source, ok := policy.ResolveScoped(candidates, sc.tenant, sc.service, sc.application)
	if !ok {
		return apierror.NotFound("no policy applies to application %s of %s for tenant %s", sc.application, sc.service, sc.tenant)
	}
	view := h.codec.policyView(p)
	view.Meta = map[string]any{"resolved_from": source}
	c.JSON(http.StatusOK, gin.H{"data": view})
	return nil
}

// put handles PUT /v1/services/:id/applications/:app/policy:
// it replaces the tenant's record of exactly the scope (version + 1) or
// creates it (version 1); 200 either way. The scope comes from the path
// and the token; attributes may repeat it but not change it.
func (h scopedPolicies) put(c *gin.Context) error {
	sc, err := scopeOf(c, true)
	if err != nil {
		return err
	}
	d, err := h.codec.readPolicyBody(c, idOptional, "")
	if err != nil {
		return err
	}
	if err := d.matchesScope(sc); err != nil {
		return err
	}
	existing, err := h.exactRecords(c.Request.Context(), sc)
	if err != nil {
		return err
	}
	if len(existing) == 0 {
		// A given data.id is ignored: it is typically that of the
		// gateway-wide policy GET resolved to, sent back as a template.
		p := policy.Policy{Tenant: sc.tenant}
		if err := h.codec.applyPolicyDraft(&p, d, true); err != nil {
			return err
		}
		created, err := h.policies.CreatePolicy(c.Request.Context(), p)
		if err != nil {
			return err
		}
		c.JSON(http.StatusOK, gin.H{"data": h.codec.policyView(created)})
		return nil
	}
	target := existing[0]
	if d.id != "" && !strings.EqualFold(d.id, target.ID) {
		return apierror.Validation(ptrData+"/id", "must be the id of the policy of this scope (%s), not %s", target.ID, d.id)
	}
	updated, err := h.policies.UpdatePolicy(c.Request.Context(), target.ID, func(p policy.Policy) (policy.Policy, error) {
		if !policy.IsExactScope(p, sc.tenant, sc.service, sc.application) {
			return p, apierror.New(http.StatusConflict, apierror.CodeConflict, "policy %s changed scope during the request; retry", p.ID)
		}
		return p, h.codec.applyPolicyDraft(&p, d, true)
	})
	if errors.Is(err, store.ErrNotFound) {
		err = apierror.New(http.StatusConflict, apierror.CodeConflict, "policy %s was deleted during the request; retry", target.ID)
	}
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"data": h.codec.policyView(updated)})
	return nil
}

// delete handles DELETE /v1/services/:id/applications/:app/policy:
// it deletes the tenant's record(s) of exactly the scope (204), never a
// gateway-wide fallback; 404 when the tenant has none.
func (h scopedPolicies) delete(c *gin.Context) error {
	sc, err := scopeOf(c, false)
	if err != nil {
		return err
	}
	existing, err := h.exactRecords(c.Request.Context(), sc)
	if err != nil {
		return err
	}
	if len(existing) == 0 {
		return apierror.NotFound("tenant %s has no policy for application %s of %s", sc.tenant, sc.application, sc.service)
	}
	for _, p := range existing {
		if err := h.policies.DeletePolicy(c.Request.Context(), p.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	c.Status(http.StatusNoContent)
	return nil
}
