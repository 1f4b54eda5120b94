package workflows

import (
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// Search attributes of job workflows: set when a job's workflow starts and
// upserted at every transition, so operators can find jobs in the Temporal
// UI by tenant, service, provider or status (docs/operations.md, Finding
// jobs). They must be registered in the namespace (RegisterSearchAttributes
// in cmd/gateway); a job started without them sets none.
var (
	TenantKey        = temporal.NewSearchAttributeKeyKeyword("GatewayTenant")
	ServiceKey       = temporal.NewSearchAttributeKeyKeyword("GatewayService")
	ProviderKey      = temporal.NewSearchAttributeKeyKeyword("GatewayProvider")
	StatusKey        = temporal.NewSearchAttributeKeyKeyword("GatewayStatus")
	ApplicationKey   = temporal.NewSearchAttributeKeyKeyword("GatewayApplication")
	PolicyIDKey      = temporal.NewSearchAttributeKeyKeyword("GatewayPolicyId")
	PolicyVersionKey = temporal.NewSearchAttributeKeyInt64("GatewayPolicyVersion")
	ErrorCodeKey     = temporal.NewSearchAttributeKeyKeyword("GatewayErrorCode")
	// WebhookKey is WebhookFailed once an event of the job's webhook was
	// given up (docs/webhooks.md).
	WebhookKey = temporal.NewSearchAttributeKeyKeyword("GatewayWebhook")
)

// WebhookFailed is WebhookKey's value for a job with a given-up event.
const WebhookFailed = "failed"

// SearchAttributeTypes are the job workflows' search attributes by name,
// as a namespace registers them.
func SearchAttributeTypes() map[string]enumspb.IndexedValueType {
	out := map[string]enumspb.IndexedValueType{PolicyVersionKey.GetName(): enumspb.INDEXED_VALUE_TYPE_INT}
	for _, k := range []temporal.SearchAttributeKeyKeyword{TenantKey, ServiceKey, ProviderKey, StatusKey, ApplicationKey, PolicyIDKey, ErrorCodeKey, WebhookKey} {
		out[k.GetName()] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	return out
}

// StartSearchAttributes are a job's search attributes when its workflow
// starts: who submitted what, and pending.
func StartSearchAttributes(in jobs.Submission) temporal.SearchAttributes {
	updates := []temporal.SearchAttributeUpdate{
		TenantKey.ValueSet(in.Tenant),
		ServiceKey.ValueSet(string(in.Service)),
		StatusKey.ValueSet(string(jobs.StatusPending)),
	}
	if in.Application != "" {
		updates = append(updates, ApplicationKey.ValueSet(in.Application))
	}
	if in.Provider != "" {
		updates = append(updates, ProviderKey.ValueSet(in.Provider))
	}
	if in.PolicyID != "" {
		updates = append(updates, PolicyIDKey.ValueSet(in.PolicyID))
	}
	return temporal.NewSearchAttributes(updates...)
}

// StartSummary is the one-line summary the Temporal UI shows for a job's
// workflow: "transcription for acme".
func StartSummary(in jobs.Submission) string {
	return serviceNoun(in.Service) + " for " + in.Tenant
}

// serviceNoun names one job of a service: "transcription", "llm-task".
func serviceNoun(id jobs.ServiceID) string {
	if svc, ok := jobs.ServiceOf(id); ok {
		return svc.EventPrefix
	}
	return string(id)
}

// transitionAttributes are the search attributes a projection write of
// snap sets.
func transitionAttributes(snap jobs.Snapshot) []temporal.SearchAttributeUpdate {
	updates := []temporal.SearchAttributeUpdate{StatusKey.ValueSet(string(snap.Status))}
	if snap.Provider != "" {
		updates = append(updates, ProviderKey.ValueSet(snap.Provider))
	}
	if r := snap.Routing; r != nil && r.PolicyID != "" {
		updates = append(updates, PolicyIDKey.ValueSet(r.PolicyID), PolicyVersionKey.ValueSet(int64(r.PolicyVersion)))
	}
	if snap.Error != nil && snap.Error.Code != "" {
		updates = append(updates, ErrorCodeKey.ValueSet(snap.Error.Code))
	}
	return updates
}

// currentDetails is the job's story in one line, for the UI's current
// details: "llm-task for acme via sandbox-fast, failed: PROVIDERS_EXHAUSTED".
func currentDetails(snap jobs.Snapshot) string {
	s := serviceNoun(snap.Service) + " for " + snap.Tenant
	if snap.Provider != "" {
		s += " via " + snap.Provider
	}
	s += ", " + string(snap.Status)
	if snap.Error != nil && snap.Error.Code != "" {
		s += ": " + snap.Error.Code
	}
	return s
}

// searchAttributesChange names the GetVersion marker of the search
// attributes and details upserted at every transition.
const searchAttributesChange = "search-attributes"
