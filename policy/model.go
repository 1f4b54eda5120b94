package policy

import (
	"slices"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// Strategy is how a policy chooses among its eligible providers.
type Strategy string

// Routing strategies.
const (
	StrategyLatency    Strategy = "latency"
	StrategyQuality    Strategy = "quality"
	StrategyPrice      Strategy = "price"
	StrategyRoundRobin Strategy = "round_robin"
)

// Strategies lists the valid strategies.
var Strategies = []Strategy{StrategyLatency, StrategyQuality, StrategyPrice, StrategyRoundRobin}

// Policy is one version of a routing policy.
type Policy struct {
	ID          string   `json:"id"`
	Tenant      string   `json:"tenant,omitempty"` // "" is a gateway-wide policy
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Version     int      `json:"version"`
	Strategy    Strategy `json:"routing_strategy"`
	// Services the policy applies to; empty means every service (the
	// earlier `services` array form). The current form has exactly one.
	Services []jobs.ServiceID `json:"services,omitempty"`
	// Application scopes the policy inside its service; "" is service level.
	Application string    `json:"application,omitempty"`
	Providers   []Entry   `json:"providers"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Entry is one provider of a policy (docs/api.md, Policies: provider
// entries).
type Entry struct {
	ProviderID string      `json:"provider_id"`
	Priority   int         `json:"priority"`
	Weight     int         `json:"weight"`
	Conditions *Conditions `json:"conditions,omitempty"`
}

// Conditions restrict when a policy entry is eligible; all given ones must
// hold.
type Conditions struct {
	MaxFileSizeMB *int     `json:"max_file_size_mb,omitempty"`
	Languages     []string `json:"languages,omitempty"`
}

// Covers reports whether the policy applies to a service.
func (p Policy) Covers(service jobs.ServiceID) bool {
	return len(p.Services) == 0 || slices.Contains(p.Services, service)
}

// Global reports whether the policy is gateway-wide.
func (p Policy) Global() bool { return p.Tenant == "" }
