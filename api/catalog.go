package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/internal/breaker"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// providerLookup finds a provider of the catalog (*providers.Catalog).
type providerLookup interface {
	Lookup(id string) (*providers.Provider, bool)
}

// statusReader reads the statuses administrators set on services and
// providers.
type statusReader interface {
	ServiceStatuses(ctx context.Context) (map[string]string, error)
	ProviderStatuses(ctx context.Context) (map[string]store.ProviderStatus, error)
}

// catalogHandler serves the services and providers with their statuses
// (docs/api.md, Service and provider status) and their breakers' health.
type catalogHandler struct {
	catalog  *providers.Catalog
	statuses statusReader
	// breakers reads the circuit breakers; nil shows no health.
	breakers BreakerStore
}

// routes registers the reads on the authenticated /v1 group.
func (h catalogHandler) routes(v1 *gin.RouterGroup) {
	v1.GET("/services", handle(h.listServices))
	v1.GET("/services/:id", handle(h.getService))
	v1.GET("/providers", handle(h.listProviders))
	v1.GET("/providers/:id", handle(h.getProvider))
}

type serviceResource struct {
	ID         string            `json:"id"`
	Type       string            `json:"type"`
	Attributes serviceAttributes `json:"attributes"`
}

type serviceAttributes struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Endpoint    string `json:"endpoint"`
	JobType     string `json:"job_type"`
	Status      string `json:"status"`
}

type providerResource struct {
	ID         string             `json:"id"`
	Type       string             `json:"type"`
	Attributes providerAttributes `json:"attributes"`
}

type providerAttributes struct {
	Name   string           `json:"name"`
	Status providers.Status `json:"status"`
	// StatusReason says why the provider has the catalog's status (an
	// extension, docs/api.md); absent once an administrator changed it.
	StatusReason string                        `json:"status_reason,omitempty"`
	Services     map[string]providerCapability `json:"services"`
}

// providerCapability is a provider's capability for a service, with the
// health of its circuit breaker (docs/api.md, Circuit breakers).
type providerCapability struct {
	providers.Capability
	Health *breakerHealth `json:"health,omitempty"`
}

func serviceView(svc jobs.Service, status string) serviceResource {
	return serviceResource{
		ID:   string(svc.ID),
		Type: "service",
		Attributes: serviceAttributes{
			Name:        svc.Name,
			Description: svc.Description,
			Endpoint:    svc.Endpoint(),
			JobType:     svc.JobType,
			Status:      status,
		},
	}
}

// providerView shows a provider with the statuses administrators set
// (override) in place of the catalog's. A capability keeps its own status
// under a provider disabled at provider level.
func providerView(p *providers.Provider, override store.ProviderStatus) providerResource {
	status, reason := p.Status, p.StatusReason
	if override.Status != "" && providers.Status(override.Status) != p.Status {
		status, reason = providers.Status(override.Status), ""
	}
	if status == "" {
		status = providers.StatusActive
	}
	services := map[string]providerCapability{}
	for id, capability := range p.Services {
		c := *capability
		if st := override.Services[string(id)]; st != "" {
			c.Status = providers.Status(st)
		}
		if c.Status == "" {
			c.Status = providers.StatusActive
		}
		services[string(id)] = providerCapability{Capability: c}
	}
	return providerResource{
		ID:         p.ID,
		Type:       "provider",
		Attributes: providerAttributes{Name: p.Name, Status: status, StatusReason: reason, Services: services},
	}
}

// listServices handles GET /v1/services.
func (h catalogHandler) listServices(c *gin.Context) error {
	statuses, err := h.statuses.ServiceStatuses(c.Request.Context())
	if err != nil {
		return err
	}
	out := []serviceResource{}
	for _, svc := range jobs.Services() {
		out = append(out, serviceView(svc, serviceStatus(statuses, svc.ID)))
	}
	c.JSON(http.StatusOK, gin.H{"data": out})
	return nil
}

// getService handles GET /v1/services/:id.
func (h catalogHandler) getService(c *gin.Context) error {
	svc, ok := jobs.LookupService(c.Param("id"))
	if !ok {
		return apierror.NotFound("no service %q", c.Param("id"))
	}
	statuses, err := h.statuses.ServiceStatuses(c.Request.Context())
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"data": serviceView(svc, serviceStatus(statuses, svc.ID))})
	return nil
}

// listProviders handles GET /v1/providers.
func (h catalogHandler) listProviders(c *gin.Context) error {
	overrides, err := h.statuses.ProviderStatuses(c.Request.Context())
	if err != nil {
		return err
	}
	breakers, err := h.readBreakers(c.Request.Context())
	if err != nil {
		return err
	}
	now := time.Now()
	out := []providerResource{}
	for _, p := range h.catalog.Providers {
		view := providerView(p, overrides[p.ID])
		if breakers != nil {
			addHealth(&view, h.catalog, p, breakers, now)
		}
		out = append(out, view)
	}
	c.JSON(http.StatusOK, gin.H{"data": out})
	return nil
}

// getProvider handles GET /v1/providers/:id.
func (h catalogHandler) getProvider(c *gin.Context) error {
	p, ok := h.catalog.Lookup(c.Param("id"))
	if !ok {
		return apierror.NotFound("no provider %q", c.Param("id"))
	}
	overrides, err := h.statuses.ProviderStatuses(c.Request.Context())
	if err != nil {
		return err
	}
	breakers, err := h.readBreakers(c.Request.Context())
	if err != nil {
		return err
	}
	view := providerView(p, overrides[p.ID])
	if breakers != nil {
		addHealth(&view, h.catalog, p, breakers, time.Now())
	}
	c.JSON(http.StatusOK, gin.H{"data": view})
	return nil
}

// readBreakers reads the circuit breakers; nil without a store.
func (h catalogHandler) readBreakers(ctx context.Context) (map[store.BreakerKey]breaker.Breaker, error) {
	if h.breakers == nil {
		return nil, nil
	}
	all, err := h.breakers.Breakers(ctx)
	if all == nil && err == nil {
		all = map[store.BreakerKey]breaker.Breaker{}
	}
	return all, err
}
