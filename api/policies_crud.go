package api

import (
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

// The /v1/policies operations: a policy by id, and its versions.

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
