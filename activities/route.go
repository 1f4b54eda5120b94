package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/internal/breaker"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// RoutingStore is what routing reads and writes: policies, tenant access,
// provider statuses and the shared routing state.
type RoutingStore interface {
	RoutingPolicies(ctx context.Context, tenant string, service jobs.ServiceID) ([]policy.Policy, error)
	GetPolicy(ctx context.Context, id string) (policy.Policy, error)
	GetPolicyVersion(ctx context.Context, id string, version int) (policy.Policy, error)
	GetTenant(ctx context.Context, id string) (*store.Tenant, error)
	ProviderStatuses(ctx context.Context) (map[string]store.ProviderStatus, error)
	ReserveRateOnce(ctx context.Context, key store.DecisionKey, providerID string, service jobs.ServiceID, perMinute, perDay int, now time.Time) (bool, error)
	NextTurnOnce(ctx context.Context, key store.DecisionKey, cursor string, now time.Time) (int64, error)
	Latencies(ctx context.Context, service jobs.ServiceID) (map[string]float64, error)
	RecordLatency(ctx context.Context, providerID string, service jobs.ServiceID, d time.Duration) error
}

// Routing decides which provider takes each attempt of a job
// (docs/routing.md).
type Routing struct {
	// Store is the routing state; nil routes by the catalog alone.
	Store     RoutingStore
	Providers *providers.Registry
	// HTTPClient makes the HEAD requests that learn media sizes (default
	// http.DefaultClient).
	HTTPClient *http.Client
	// WorkerID identifies this worker process in job metadata.
	WorkerID string
	// Metrics counts decisions and failovers; nil records none.
	Metrics *metrics.Metrics
	// Breakers are the providers' circuit breakers; nil: none.
	Breakers *Breakers
	// MaxOutageWait is how long a job of a service may wait in all for
	// open circuit breakers before it fails PROVIDERS_EXHAUSTED; a service
	// not listed has DefaultMaxOutageWait (docs/providers.md, Waiting out
	// an outage).
	MaxOutageWait map[jobs.ServiceID]time.Duration
}

// DefaultMaxOutageWait is a service's maximum wait for an outage unless
// the deployment sets another.
const DefaultMaxOutageWait = 10 * time.Minute

// maxOutageWait is service's maximum wait for an outage.
func (r *Routing) maxOutageWait(service jobs.ServiceID) time.Duration {
	if d, ok := r.MaxOutageWait[service]; ok {
		return d
	}
	return DefaultMaxOutageWait
}

// PolicyPin is the policy version a job was first routed with; failover
// decisions reuse it whatever happened to the policy since.
type PolicyPin struct {
	ID      string      `json:"id"`
	Version int         `json:"version"`
	Source  jobs.Source `json:"source"`
}

// RouteInput asks for the provider of one attempt of a job.
type RouteInput struct {
	JobID       string          `json:"job_id"`
	Service     jobs.ServiceID  `json:"service"`
	Tenant      string          `json:"tenant"`
	Application string          `json:"application,omitempty"`
	Input       json.RawMessage `json:"input"`
	Options     json.RawMessage `json:"options,omitempty"`
	Explicit    string          `json:"explicit_provider,omitempty"`
	PolicyID    string          `json:"policy_id,omitempty"`
	Pinned      *PolicyPin      `json:"pinned_policy,omitempty"`
	// Failed lists providers earlier attempts failed on.
	Failed  []string `json:"failed,omitempty"`
	Attempt int      `json:"attempt"`
	// Retried marks the first decision of an operator's retry: routed
	// afresh, with the reason of a first decision.
	Retried bool `json:"retried,omitempty"`
	// MediaSizeMB and MediaDuration are what the media stage learned of
	// the job's media; providers whose limits it exceeds are not eligible.
	MediaSizeMB   *float64 `json:"media_size_mb,omitempty"`
	MediaDuration *float64 `json:"media_duration,omitempty"`
	// WaitOutOutages: when every provider left has an open circuit
	// breaker, answer Wait instead of keeping one in play; WaitingSince is
	// when the job began waiting, if it did before.
	WaitOutOutages bool       `json:"wait_out_outages,omitempty"`
	WaitingSince   *time.Time `json:"waiting_since,omitempty"`
}

// RouteWait tells a job to wait for an outage and route again at Until
// (docs/providers.md, Waiting out an outage).
type RouteWait struct {
	Until time.Time `json:"until"`
	// Providers are those waited for; Retry those among them an earlier
	// attempt failed on, to be tried again after the wait.
	Providers []string `json:"providers"`
	Retry     []string `json:"retry,omitempty"`
	Message   string   `json:"message"`
}

// RouteOutput is the decision: a routing, or the error the job fails with
// when no provider is left.
type RouteOutput struct {
	Routing  jobs.RoutingInfo `json:"routing"`
	Error    *jobs.Error      `json:"error,omitempty"`
	WorkerID string           `json:"worker_id"`
	// CallLocally says the provider's calls are short enough to run as a
	// local activity (see ShortCall).
	CallLocally bool `json:"call_locally,omitempty"`
	// Submits says the provider works asynchronously: the workflow
	// submits the job, then checks on it (SubmitToProvider, CheckProvider).
	Submits bool `json:"submits,omitempty"`
	// Wait: no provider now, the job waits for an outage to end.
	Wait *RouteWait `json:"wait,omitempty"`
}

// DecideRoute picks the provider for one attempt of a job: it gathers what
// the decision depends on, lets package policy decide, and reserves the
// chosen provider's rate limit. A provider whose reservation is refused (at
// its limit) is marked rate_limited and the decision made again: the
// counts are not read beforehand, the reservation is the check.
//
// The workflow retries DecideRoute until it succeeds, also after the
// reservation committed; the round-robin turn and the reservation are
// taken once per job attempt (store.DecisionKey), so a retry gets the
// same turn and is not counted again: it decides the same provider unless
// what the decision reads changed in between.
func (r *Routing) DecideRoute(ctx context.Context, in RouteInput) (RouteOutput, error) {
	now := time.Now().UTC()
	out := RouteOutput{WorkerID: r.WorkerID}
	needs, err := requirements(in)
	if err != nil {
		return out, fmt.Errorf("job %s: read requirements: %w", in.JobID, err)
	}
	req := policy.Request{
		Needs:    needs,
		Catalog:  r.Providers.Catalog().Providers,
		Explicit: in.Explicit,
		Failed:   in.Failed,
		Attempt:  in.Attempt,
		Retried:  in.Retried,
		Now:      now,
		// Waiting out an outage.
		WaitOutOutages: in.WaitOutOutages && r.maxOutageWait(in.Service) > 0,
		// Known once the media stage ran; before it, a policy condition
		// on file size asks the media host (mediaSizeMB).
		FileSizeMB:      in.MediaSizeMB,
		DurationSeconds: in.MediaDuration,
	}
	if r.Store != nil {
		if jobErr, err := r.gatherRouting(ctx, in, &req); err != nil || jobErr != nil {
			out.Error = jobErr
			return out, err
		}
	}
	limited := map[string]bool{}
	req.RateLimited = func(id string) bool { return limited[id] }
	circuits, err := r.Breakers.circuits(ctx, in.Service, now)
	if err != nil {
		return out, err
	}
	noProbe := map[string]bool{} // half-open, its probes taken
	req.Circuit = func(id string) policy.Circuit {
		if noProbe[id] {
			return policy.Circuit{State: breaker.Open}
		}
		if c, ok := circuits[id]; ok {
			return c
		}
		return policy.Circuit{State: breaker.Closed}
	}
	for {
		routing, err := policy.Decide(req)
		out.Routing = routing
		var noCandidate *policy.NoCandidateError
		if errors.As(err, &noCandidate) {
			out.Routing.ProviderEvaluations = noCandidate.Evaluations
			out.Error = &jobs.Error{Code: noCandidate.Code, Message: noCandidate.Error()}
			r.recordDecision(in, jobs.RoutingInfo{Reason: "none", PolicySource: out.Routing.PolicySource})
			return out, nil
		}
		var wait *policy.WaitError
		if errors.As(err, &wait) {
			return r.waitOrGiveUp(in, out, wait, now), nil
		}
		if err != nil {
			return out, err
		}
		// A half-open provider takes the decision only with a probe; one
		// the guard kept in play after its probe was refused takes it
		// without.
		if id := routing.ProviderID; in.Explicit == "" && circuits[id].State == breaker.HalfOpen && !noProbe[id] {
			probe, err := r.Breakers.takeProbe(ctx, id, in.Service, now)
			if err != nil {
				return out, err
			}
			if !probe {
				noProbe[id] = true
				continue
			}
		}
		fits, err := r.reserve(ctx, in, routing.ProviderID, now)
		if err != nil {
			return out, err
		}
		if fits {
			out.CallLocally = callsLocally(r.Providers, routing.ProviderID)
			out.Submits = submits(r.Providers, routing.ProviderID)
			r.recordDecision(in, out.Routing)
			return out, nil
		}
		limited[routing.ProviderID] = true
	}
}

// waitOrGiveUp answers a job that every provider left has an open breaker
// for: wait until the first probes, or, past its service's maximum wait,
// fail PROVIDERS_EXHAUSTED.
func (r *Routing) waitOrGiveUp(in RouteInput, out RouteOutput, wait *policy.WaitError, now time.Time) RouteOutput {
	out.Routing.ProviderEvaluations = wait.Evaluations
	since := now
	if in.WaitingSince != nil {
		since = *in.WaitingSince
	}
	limit := r.maxOutageWait(in.Service)
	if wait.Until.Sub(since) > limit {
		out.Error = &jobs.Error{Code: jobs.CodeProvidersExhausted, Message: fmt.Sprintf(
			"the circuit breakers of %s stay open past the job's maximum wait of %s for an outage",
			strings.Join(wait.Providers, ", "), limit)}
		r.recordDecision(in, jobs.RoutingInfo{Reason: "none", PolicySource: out.Routing.PolicySource})
		return out
	}
	out.Wait = &RouteWait{Until: wait.Until, Providers: wait.Providers, Retry: wait.Retry,
		Message: fmt.Sprintf("waiting until %s: the circuit breakers of %s are open", wait.Until.UTC().Format(time.RFC3339), strings.Join(wait.Providers, ", "))}
	return out
}

// requirements reads what the job asks of a provider from its recorded
// input and options.
func requirements(in RouteInput) (jobs.Requirements, error) {
	spec, ok := jobs.ServiceOf(in.Service)
	if !ok {
		return jobs.Requirements{}, fmt.Errorf("unknown service %q", in.Service)
	}
	job, err := spec.Load(in.Input, in.Options)
	if err != nil {
		return jobs.Requirements{}, err
	}
	return job.Requirements(), nil
}

// gatherRouting fills in the parts of the request that come from the
// store. It returns a jobs.Error when the job cannot be routed at all.
func (r *Routing) gatherRouting(ctx context.Context, in RouteInput, req *policy.Request) (*jobs.Error, error) {
	statuses, err := r.Store.ProviderStatuses(ctx)
	if err != nil {
		return nil, err
	}
	req.Status = func(p *providers.Provider) (providers.Status, providers.Status) {
		override, ok := statuses[p.ID]
		if !ok {
			return policy.CatalogStatus(p, in.Service)
		}
		return policy.EffectiveStatus(p, in.Service, override.Override())
	}
	tenant, err := r.Store.GetTenant(ctx, in.Tenant)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if tenant != nil {
		req.TenantAllows = func(id string) bool {
			access, ok := tenant.Providers[id]
			return !ok || access.Enabled
		}
	}
	if in.Explicit != "" {
		return nil, nil
	}
	if jobErr, err := r.resolvePolicy(ctx, in, tenant, req); err != nil || jobErr != nil {
		return jobErr, err
	}
	if req.Policy == nil {
		return nil, nil
	}
	switch req.Policy.Strategy {
	case policy.StrategyLatency:
		latencies, err := r.Store.Latencies(ctx, in.Service)
		if err != nil {
			return nil, err
		}
		req.Latency = func(id string) (float64, bool) { ms, ok := latencies[id]; return ms, ok }
	case policy.StrategyRoundRobin:
		turn, err := r.Store.NextTurnOnce(ctx, decisionKey(in), "policy:"+req.Policy.ID, req.Now)
		if err != nil {
			return nil, err
		}
		req.RoundRobinTurn = turn
	}
	if needsFileSize(req.Policy) && req.FileSizeMB == nil {
		req.FileSizeMB = r.mediaSizeMB(ctx, in)
	}
	return nil, nil
}

// resolvePolicy finds the policy in force: the pinned version on failover,
// the job's policy_id, or the resolution chain (docs/routing.md, Which
// policy applies).
func (r *Routing) resolvePolicy(ctx context.Context, in RouteInput, tenant *store.Tenant, req *policy.Request) (*jobs.Error, error) {
	switch {
	case in.Pinned != nil:
		p, err := r.Store.GetPolicyVersion(ctx, in.Pinned.ID, in.Pinned.Version)
		if err != nil {
			return nil, err
		}
		req.Policy, req.Source = &p, in.Pinned.Source
	case in.PolicyID != "":
		p, err := r.Store.GetPolicy(ctx, in.PolicyID)
		if errors.Is(err, store.ErrNotFound) {
			return &jobs.Error{Code: jobs.CodeNoEligibleProvider, Message: fmt.Sprintf("policy %s no longer exists", in.PolicyID)}, nil
		}
		if err != nil {
			return nil, err
		}
		req.Policy, req.Source = &p, jobs.SourceExplicitID
	default:
		candidates, err := r.Store.RoutingPolicies(ctx, in.Tenant, in.Service)
		if err != nil {
			return nil, err
		}
		scope := policy.Scope{Tenant: in.Tenant, Application: in.Application, Service: in.Service}
		if tenant != nil && tenant.DefaultPolicyID != nil {
			scope.TenantDefaultPolicyID = *tenant.DefaultPolicyID
		}
		if p, source, ok := policy.Resolve(candidates, scope); ok {
			req.Policy, req.Source = &p, source
		}
	}
	return nil, nil
}

// reserve counts the request against the provider's published limits,
// once per decision. An explicitly named provider is counted but never
// refused: the client chose it, and the job was accepted.
func (r *Routing) reserve(ctx context.Context, in RouteInput, providerID string, now time.Time) (bool, error) {
	if r.Store == nil {
		return true, nil
	}
	p, ok := r.Providers.Catalog().Lookup(providerID)
	if !ok {
		return true, nil
	}
	limits := p.Services[in.Service].Limits
	if limits.RequestsPerMinute <= 0 && limits.RequestsPerDay <= 0 {
		return true, nil
	}
	fits, err := r.Store.ReserveRateOnce(ctx, decisionKey(in), providerID, in.Service, limits.RequestsPerMinute, limits.RequestsPerDay, now)
	if err != nil {
		return false, err
	}
	return fits || in.Explicit != "", nil
}

// decisionKey names the decision of one attempt of a job.
func decisionKey(in RouteInput) store.DecisionKey {
	return store.DecisionKey{JobID: in.JobID, Attempt: in.Attempt}
}

func needsFileSize(p *policy.Policy) bool {
	return slices.ContainsFunc(p.Providers, func(e policy.Entry) bool {
		return e.Conditions != nil && e.Conditions.MaxFileSizeMB != nil
	})
}

// mediaSizeMB asks the media's server for its size with a HEAD request;
// nil when the job has no media or the size cannot be learned.
func (r *Routing) mediaSizeMB(ctx context.Context, in RouteInput) *float64 {
	var media struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(in.Input, &media); err != nil || media.URL == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, media.URL, nil)
	if err != nil {
		return nil
	}
	client := r.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 || resp.ContentLength < 0 {
		return nil
	}
	mb := float64(resp.ContentLength) / (1 << 20)
	return &mb
}

// recordDecision counts a decision, and the failover it stands for when an
// earlier attempt of this run failed.
func (r *Routing) recordDecision(in RouteInput, routing jobs.RoutingInfo) {
	r.Metrics.RoutingDecision(string(in.Service), string(routing.Reason), string(routing.PolicySource))
	if len(in.Failed) > 0 && !in.Retried {
		r.Metrics.Failover(string(in.Service), in.Failed[len(in.Failed)-1])
	}
}
