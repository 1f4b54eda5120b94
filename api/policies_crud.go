package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/store"
)

// policyRecords is what the /v1/policies operations read and write.
type policyRecords interface {
	policyReader
	policyWriter
	ListPolicies(ctx context.Context, f store.PolicyFilter, offset, limit int) ([]policy.Policy, int64, error)
	ListPolicyVersions(ctx context.Context, id string) ([]policy.Policy, error)
}

// policiesHandler serves /v1/policies: a policy by id, and its versions
// (docs/api.md, Policies).
type policiesHandler struct {
	policies policyRecords
	codec    policyCodec
}

// visible loads the policy named by the path as the caller may see
// it: a malformed id, an unknown one and another tenant's are all 404.
func (h policiesHandler) visible(c *gin.Context) (policyActor, policy.Policy, error) {
	actor, err := policyActorOf(c)
	if err != nil {
		return policyActor{}, policy.Policy{}, err
	}
	id, ok := policyPathID(c)
	if !ok {
		return actor, policy.Policy{}, policyNotFound(c.Param("id"))
	}
	p, err := h.policies.GetPolicy(c.Request.Context(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !actor.canSee(p)) {
		return actor, policy.Policy{}, policyNotFound(id)
	}
	return actor, p, err
}

// modifiable is visiblePolicy for a change: a policy the caller may
// see but not change is 403 (canModify).
func (h policiesHandler) modifiable(c *gin.Context) (policyActor, policy.Policy, error) {
	actor, p, err := h.visible(c)
	if err != nil {
		return actor, p, err
	}
	return actor, p, actor.canModify(p)
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

// list handles GET /v1/policies. A confined caller sees its own
// tenant's and the gateway-wide policies and may not set filter[tenant];
// with admin:cross-tenant no filter lists every policy, filter[tenant]
// that tenant's only.
func (h policiesHandler) list(c *gin.Context) error {
	actor, err := policyActorOf(c)
	if err != nil {
		return err
	}
	filterTenant, filtered := c.GetQuery("filter[tenant]")
	if filtered && !actor.crossTenant {
		return apierror.Forbidden("filter[tenant] needs the %s scope; without it the list shows your tenant's and the gateway-wide policies", auth.ScopeCrossTenant)
	}
	page, err := parsePage(c)
	if err != nil {
		return err
	}
	var f store.PolicyFilter
	switch {
	case filtered:
		if filterTenant == "" {
			return apierror.New(http.StatusUnprocessableEntity, apierror.CodeValidation, "query filter[tenant]: must be a tenant slug")
		}
		f = store.PolicyFilter{Tenant: &filterTenant}
	case actor.crossTenant:
		f = store.PolicyFilter{IncludeGlobal: true}
	default:
		own := actor.tenant // "" (no tenant claim): only gateway-wide ones
		f = store.PolicyFilter{Tenant: &own, IncludeGlobal: true}
	}
	list, total, err := h.policies.ListPolicies(c.Request.Context(), f, page.Offset(), page.Size)
	if err != nil {
		return err
	}
	out := make([]policyResource, 0, len(list))
	for _, p := range list {
		out = append(out, h.codec.policyView(p))
	}
	c.JSON(http.StatusOK, collection(c, out, page, total))
	return nil
}

// create handles POST /v1/policies: 201 with version 1.
func (h policiesHandler) create(c *gin.Context) error {
	actor, err := policyActorOf(c)
	if err != nil {
		return err
	}
	d, err := h.codec.readPolicyBody(c, idForbidden, "")
	if err != nil {
		return err
	}
	tenant, err := actor.tenantForCreate(d.tenant)
	if err != nil {
		return err
	}
	p := policy.Policy{Tenant: tenant}
	if err := h.codec.applyPolicyDraft(&p, d, true); err != nil {
		return err
	}
	created, err := h.policies.CreatePolicy(c.Request.Context(), p)
	if err != nil {
		return err
	}
	c.Header("Location", "/v1/policies/"+created.ID)
	c.JSON(http.StatusCreated, gin.H{"data": h.codec.policyView(created)})
	return nil
}

// get handles GET /v1/policies/:id: the current version.
func (h policiesHandler) get(c *gin.Context) error {
	_, p, err := h.visible(c)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"data": h.codec.policyView(p)})
	return nil
}

// write handles PUT (replace: every writable field as on create) and
// PATCH (only the given members change; a given providers list replaces
// the whole list) of /v1/policies/:id. Both store version + 1.
func (h policiesHandler) write(replace bool) gin.HandlerFunc {
	return handle(func(c *gin.Context) error {
		// Answer 404 and 403 before looking at the body.
		actor, current, err := h.modifiable(c)
		if err != nil {
			return err
		}
		d, err := h.codec.readPolicyBody(c, idRequired, current.ID)
		if err != nil {
			return err
		}
		updated, err := h.policies.UpdatePolicy(c.Request.Context(), current.ID, func(p policy.Policy) (policy.Policy, error) {
			// Checked again under the row lock: the policy may have moved.
			if !actor.canSee(p) {
				return p, policyNotFound(p.ID)
			}
			if err := actor.canModify(p); err != nil {
				return p, err
			}
			tenant, err := actor.tenantForUpdate(p, d.tenant)
			if err != nil {
				return p, err
			}
			p.Tenant = tenant
			return p, h.codec.applyPolicyDraft(&p, d, replace)
		})
		if errors.Is(err, store.ErrNotFound) {
			err = policyNotFound(current.ID)
		}
		if err != nil {
			return err
		}
		c.JSON(http.StatusOK, gin.H{"data": h.codec.policyView(updated)})
		return nil
	})
}

// delete handles DELETE /v1/policies/:id: 204. The versions stay
// readable under /versions.
func (h policiesHandler) delete(c *gin.Context) error {
	_, p, err := h.modifiable(c)
	if err != nil {
		return err
	}
	err = h.policies.DeletePolicy(c.Request.Context(), p.ID)
	if errors.Is(err, store.ErrNotFound) {
		err = policyNotFound(p.ID)
	}
	if err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

// visibleVersions loads every version of the policy named by the path,
// oldest first, also of a deleted policy. Who may read them follows the
// latest version's owner.
func (h policiesHandler) visibleVersions(c *gin.Context) ([]policy.Policy, error) {
	actor, err := policyActorOf(c)
	if err != nil {
		return nil, err
	}
	id, ok := policyPathID(c)
	if !ok {
		return nil, policyNotFound(c.Param("id"))
	}
	versions, err := h.policies.ListPolicyVersions(c.Request.Context(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (len(versions) == 0 || !actor.canSee(versions[len(versions)-1]))) {
		return nil, policyNotFound(id)
	}
	return versions, err
}

// listVersions handles GET /v1/policies/:id/versions: every version,
// newest first, paginated.
func (h policiesHandler) listVersions(c *gin.Context) error {
	versions, err := h.visibleVersions(c)
	if err != nil {
		return err
	}
	page, err := parsePage(c)
	if err != nil {
		return err
	}
	slices.Reverse(versions)
	out := make([]policyResource, 0, page.Size)
	for i := page.Offset(); i < len(versions) && len(out) < page.Size; i++ {
		out = append(out, h.codec.policyView(versions[i]))
	}
	c.JSON(http.StatusOK, collection(c, out, page, int64(len(versions))))
	return nil
}

// getVersion handles GET /v1/policies/:id/versions/:version.
func (h policiesHandler) getVersion(c *gin.Context) error {
	versions, err := h.visibleVersions(c)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(c.Param("version"))
	if err != nil || n < 1 || n > len(versions) || versions[n-1].Version != n {
		return apierror.NotFound("policy %s has no version %s", versions[0].ID, c.Param("version"))
	}
	c.JSON(http.StatusOK, gin.H{"data": h.codec.policyView(versions[n-1])})
	return nil
}
