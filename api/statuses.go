package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/strictjson"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// StatusStore keeps the statuses administrators set on services and
// providers (store.Cache in front of the store, so that reading them
// for every job stays cheap).
type StatusStore interface {
	ServiceStatuses(ctx context.Context) (map[string]string, error)
	SetServiceStatus(ctx context.Context, id, status string) error
	ProviderStatuses(ctx context.Context) (map[string]store.ProviderStatus, error)
	SetProviderStatus(ctx context.Context, id string, status *string, services map[string]string) (store.ProviderStatus, error)
}

// Service statuses (docs/api.md, Service and provider status).
const (
	serviceActive     = "active"
	serviceDeprecated = "deprecated"
	serviceDisabled   = "disabled"
)

var serviceStatusValues = []string{serviceActive, serviceDeprecated, serviceDisabled}

// statusWriter sets the statuses administrators give services and
// providers.
type statusWriter interface {
	SetServiceStatus(ctx context.Context, id, status string) error
	SetProviderStatus(ctx context.Context, id string, status *string, services map[string]string) (store.ProviderStatus, error)
}

// statusesHandler serves the status updates of services and providers
// (docs/api.md, Service and provider status).
type statusesHandler struct {
	catalog  providerLookup
	statuses statusWriter
}

// routes registers the updates on the authenticated /v1 group.
func (h statusesHandler) routes(v1 *gin.RouterGroup) {
	v1.PATCH("/services/:id", auth.RequireScope("services:write"), handle(h.updateService))
	v1.PATCH("/providers/:id", auth.RequireScope("providers:write"), auth.RequireSuperAdmin(), handle(h.updateProvider))
}

// serviceStatus is a service's current status; active unless set.
func serviceStatus(statuses map[string]string, id jobs.ServiceID) string {
	if st := statuses[string(id)]; st != "" {
		return st
	}
	return serviceActive
}

// updateService handles PATCH /v1/services/:id (scope services:write).
func (h statusesHandler) updateService(c *gin.Context) error {
	svc, ok := jobs.LookupService(c.Param("id"))
	if !ok {
		return apierror.NotFound("no service %q", c.Param("id"))
	}
	env, err := readEnvelope(c, resourceSpec("service", string(svc.ID), "status"))
	if err != nil {
		return err
	}
	status, given, err := stringMember(env.Attributes, "status", ptrAttributes)
	if err != nil {
		return err
	}
	if !given || !slices.Contains(serviceStatusValues, status) {
		return apierror.Validation(ptrAttributes+"/status", "is required and must be one of %s", strings.Join(serviceStatusValues, ", "))
	}
	if err := h.statuses.SetServiceStatus(c.Request.Context(), string(svc.ID), status); err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"data": serviceView(svc, status)})
	return nil
}

// updateProvider handles PATCH /v1/providers/:id (scope providers:write
// and super-admin): only the statuses given change.
func (h statusesHandler) updateProvider(c *gin.Context) error {
	p, ok := h.catalog.Lookup(c.Param("id"))
	if !ok {
		return apierror.NotFound("no provider %q", c.Param("id"))
	}
	env, err := readEnvelope(c, resourceSpec("provider", p.ID, "status", "services"))
	if err != nil {
		return err
	}
	status, services, err := parseProviderStatusChange(p, env.Attributes)
	if err != nil {
		return err
	}
	ps, err := h.statuses.SetProviderStatus(c.Request.Context(), p.ID, status, services)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"data": providerView(p, ps)})
	return nil
}

// parseProviderStatusChange validates the attributes of a provider status
// update: status and services (each entry {status}), at least one given.
func parseProviderStatusChange(p *providers.Provider, attrs map[string]json.RawMessage) (*string, map[string]string, error) {
	var status *string
	st, given, err := stringMember(attrs, "status", ptrAttributes)
	if err != nil {
		return nil, nil, err
	}
	if given {
		if !providers.Status(st).Valid() {
			return nil, nil, apierror.Validation(ptrAttributes+"/status", "must be one of %s", providerStatusNames())
		}
		status = &st
	}
	members, err := object(attrs["services"], ptrAttributes+"/services")
	if err != nil {
		return nil, nil, err
	}
	if status == nil && len(members) == 0 {
		return nil, nil, apierror.Validation(ptrAttributes, "must give status, services (with at least one service) or both")
	}
	keys := make([]string, 0, len(members))
	for key := range members {
		keys = append(keys, key)
	}
	slices.Sort(keys) // report the first problem deterministically
	services := make(map[string]string, len(members))
	for _, key := range keys {
		pointer := ptrAttributes + "/services/" + strictjson.EscapeName(key)
		if _, ok := jobs.LookupService(key); !ok {
			return nil, nil, apierror.Validation(pointer, "is not a service; use %s", serviceIDs())
		}
		if _, ok := p.Services[jobs.ServiceID(key)]; !ok {
			return nil, nil, apierror.Unprocessable(apierror.CodeUnsupportedOption, "%s: provider %s does not support %s", pointer, p.ID, key)
		}
		if strictjson.Absent(members[key]) {
			return nil, nil, apierror.Validation(pointer, "must be an object with a status")
		}
		var entry struct {
			Status *string `json:"status"`
		}
		if err := decodeStrict(members[key], pointer, &entry); err != nil {
			return nil, nil, err
		}
		if entry.Status == nil || !providers.Status(*entry.Status).Valid() {
			return nil, nil, apierror.Validation(pointer+"/status", "is required and must be one of %s", providerStatusNames())
		}
		services[key] = *entry.Status
	}
	return status, services, nil
}

func providerStatusNames() string {
	names := make([]string, len(providers.Statuses))
	for i, st := range providers.Statuses {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}
