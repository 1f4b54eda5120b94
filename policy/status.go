package policy

import (
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// ProviderOverride is an administrator's change to a provider's catalog
// statuses; empty values keep the catalog's.
type ProviderOverride struct {
	Status   providers.Status
	Services map[jobs.ServiceID]providers.Status
}

// NewProviderOverride builds an override from its stored form: the
// provider's status and its services' statuses, by service id.
func NewProviderOverride(status string, services map[string]string) *ProviderOverride {
	o := &ProviderOverride{Status: providers.Status(status)}
	if len(services) > 0 {
		o.Services = make(map[jobs.ServiceID]providers.Status, len(services))
		for id, st := range services {
			o.Services[jobs.ServiceID(id)] = providers.Status(st)
		}
	}
	return o
}

// EffectiveStatus is a provider's status and the status of its capability
// for service once override (nil: none) is applied to the catalog. A
// provider disabled at provider level is disabled for every service, so the
// capability status is then disabled whatever the capability says.
func EffectiveStatus(p *providers.Provider, service jobs.ServiceID, override *ProviderOverride) (provider, capability providers.Status) {
	provider, capability = CatalogStatus(p, service)
	if override != nil {
		if override.Status != "" {
			provider = override.Status
		}
		if s := override.Services[service]; s != "" {
			capability = s
		}
	}
	if provider == providers.StatusDisabled {
		capability = providers.StatusDisabled
	}
	return provider, capability
}
