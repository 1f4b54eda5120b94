package api

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
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
// (docs/api.md, Service and provider status).
type catalogHandler struct {
	catalog  *providers.Catalog
	statuses statusReader
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
	StatusReason string                          `json:"status_reason,omitempty"`
	Services     map[string]providers.Capability `json:"services"`
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
	services := map[string]providers.Capability{}
	for id, capability := range p.Services {
		c := *capability
		if st := override.Services[string(id)]; st != "" {
			c.Status = providers.Status(st)
		}
		if c.Status == "" {
			c.Status = providers.StatusActive
		}
		services[string(id)] = c
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
	out := []providerResource{}
	for _, p := range h.catalog.Providers {
		out = append(out, providerView(p, overrides[p.ID]))
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
	c.JSON(http.StatusOK, gin.H{"data": providerView(p, overrides[p.ID])})
	return nil
}
