package jobs

import "time"

// A job's routing record (docs/routing.md, The routing record): every
// decision is appended to the job's routing_history.
// Reason says why a provider was picked.
type Reason string

// Routing reasons (docs/routing.md, The routing record).
const (
	ReasonExplicitChoice Reason = "explicit_choice"
	ReasonPolicyRule     Reason = "policy_rule"
	ReasonFailover       Reason = "failover"
	ReasonDefault        Reason = "default"
)

// Source says where the policy of a decision came from (docs/routing.md,
// Which policy applies).
type Source string

// Policy sources, in resolution order.
const (
	SourceExplicitID        Source = "explicit_id"
	SourceTenantApplication Source = "tenant_application"
	SourceGlobalApplication Source = "global_application"
	SourceTenantDefault     Source = "tenant_default"
	SourceTenantLatest      Source = "tenant_latest"
	SourceGlobalLatest      Source = "global_latest"
	SourceNone              Source = "none"
)

// Evaluation reasons: why a candidate was or was not selected.
const (
	EvalSelected               = "selected"
	EvalConditionFileSize      = "condition_file_size"
	EvalLimitFileSize          = "limit_file_size" // the capability's max_file_size_mb
	EvalLimitDuration          = "limit_duration"  // the capability's max_duration_seconds
	EvalConditionLanguage      = "condition_language"
	EvalProviderDisabled       = "provider_disabled"
	EvalProviderDegraded       = "provider_degraded"
	EvalServiceNotSupported    = "service_not_supported"
	EvalOptionNotSupported     = "option_not_supported"
	EvalTenantProviderDisabled = "tenant_provider_disabled"
	EvalRateLimited            = "rate_limited"
	EvalCircuitOpen            = "circuit_open" // the provider's circuit breaker is open (docs/providers.md, Circuit breakers)
	EvalFailed                 = "failed"
	EvalNotChosen              = "lower_rank"
)

// Evaluation is the verdict on one candidate provider.
type Evaluation struct {
	ProviderID  string    `json:"provider_id"`
	Selected    bool      `json:"selected"`
	Reason      string    `json:"reason"`
	Message     string    `json:"message"`
	EvaluatedAt time.Time `json:"evaluated_at"`
}

// RoutingInfo records one routing decision of a job.
type RoutingInfo struct {
	ProviderID          string       `json:"provider_id"`
	Reason              Reason       `json:"reason"`
	PolicyID            string       `json:"policy_id,omitempty"`
	PolicyVersion       int          `json:"policy_version,omitempty"`
	PolicySource        Source       `json:"policy_source,omitempty"`
	Attempt             int          `json:"attempt"`
	DecidedAt           time.Time    `json:"decided_at"`
	ProviderEvaluations []Evaluation `json:"provider_evaluations"`
}
