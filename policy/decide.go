// Package policy decides which provider runs a job. It is pure: callers pass
// in everything the decision depends on (catalog, statuses, tenant access,
// the resolved policy, earlier failures, the clock) and get back a
// jobs.RoutingInfo that explains the choice.
package policy

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/ai-job-gateway/gateway/internal/breaker"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// NoCandidateError says that no provider is left for a job.
type NoCandidateError struct {
	// Code is NO_ELIGIBLE_PROVIDER on the first attempt and
	// PROVIDERS_EXHAUSTED once a provider has failed.
	Code        string
	Evaluations []jobs.Evaluation
}

func (e *NoCandidateError) Error() string {
	if e.Code == jobs.CodeProvidersExhausted {
		return "every candidate provider failed"
	}
	return "no provider is eligible for this job"
}

// WaitError says that every provider left for a job is out for an open
// circuit breaker alone: the job may wait until Until, when the first of
// them lets probes through, and route again (docs/providers.md, Waiting
// out an outage). Only requests with WaitOutOutages get it.
type WaitError struct {
	Until time.Time
	// Providers are the providers waited for; Retry those among them an
	// earlier attempt of the job failed on, tried again after the wait.
	Providers, Retry []string
	Evaluations      []jobs.Evaluation
}

func (e *WaitError) Error() string {
	return "every provider left for the job has an open circuit breaker"
}

// ErrNoCandidate matches any *NoCandidateError with errors.Is.
var ErrNoCandidate = errors.New("no candidate provider")

// Is makes errors.Is(err, ErrNoCandidate) true.
func (e *NoCandidateError) Is(target error) bool { return target == ErrNoCandidate }

// Request is everything one routing decision depends on.
type Request struct {
	Needs jobs.Requirements
	// Catalog lists the providers in catalog order.
	Catalog []*providers.Provider
	// Status gives the effective provider-level status and the status of
	// the provider's capability for the job's service (default: the
	// catalog's).
	Status func(p *providers.Provider) (provider, service providers.Status)
	// TenantAllows reports whether the job's tenant may use a provider
	// (default: every provider).
	TenantAllows func(providerID string) bool
	// RateLimited reports a provider at its published request limit
	// (default: none).
	RateLimited func(providerID string) bool
	// Circuit is the circuit breaker of a provider for the job's service
	// (default: closed).
	Circuit func(providerID string) Circuit
	// Latency is a provider's observed latency for the service in
	// milliseconds, if any was observed.
	Latency func(providerID string) (ms float64, ok bool)
	// Explicit is the provider the job named, if any.
	Explicit string
	// Policy is the policy in force (nil: no policy, default routing) and
	// Source where it came from.
	Policy *Policy
	Source jobs.Source
	// FileSizeMB is the size of the job's media when known.
	FileSizeMB *float64
	// DurationSeconds is the length of the job's media when known.
	DurationSeconds *float64
	// RoundRobinTurn is the policy's shared round-robin counter for this
	// decision (round_robin policies only).
	RoundRobinTurn int64
	// Failed lists providers an earlier attempt of this job failed on.
	Failed []string
	// Attempt numbers this decision, from 1.
	Attempt int
	// Retried marks the first decision of an operator's retry: its
	// attempt number continues the job's, but it is no failover.
	Retried bool
	// WaitOutOutages: when every provider left is out for an open circuit
	// breaker alone, answer *WaitError instead of keeping one in play; a
	// provider an earlier attempt failed on counts as left while its
	// breaker is open (the outage explains the failure).
	WaitOutOutages bool
	Now            time.Time
}

// Decide picks the provider for one attempt of a job.
func Decide(req Request) (jobs.RoutingInfo, error) {
	switch {
	case req.Explicit != "":
		return decideExplicit(req)
	case req.Policy != nil:
		return decidePolicy(req)
	default:
		return decideDefault(req)
	}
}

// decideExplicit honours the provider the job named. Its status no longer
// matters once the job was accepted ("accepted jobs keep running"); only an
// earlier failure removes it.
func decideExplicit(req Request) (jobs.RoutingInfo, error) {
	info := req.info(jobs.ReasonExplicitChoice)
	eval := jobs.Evaluation{ProviderID: req.Explicit, EvaluatedAt: req.Now}
	if slices.Contains(req.Failed, req.Explicit) {
		eval.Reason, eval.Message = jobs.EvalFailed, fmt.Sprintf("an earlier attempt on %s failed", req.Explicit)
		return info, req.noCandidate([]jobs.Evaluation{eval})
	}
	if p, ok := lookup(req.Catalog, req.Explicit); ok {
		if reason, message := req.overLimit(p); reason != "" {
			eval.Reason, eval.Message = reason, message
			return info, req.noCandidate([]jobs.Evaluation{eval})
		}
	}
	eval.Selected, eval.Reason, eval.Message = true, jobs.EvalSelected, fmt.Sprintf("the job named provider %s", req.Explicit)
	info.ProviderID = req.Explicit
	info.ProviderEvaluations = []jobs.Evaluation{eval}
	return info, nil
}

// candidate is an eligible provider and its evaluation's index.
type candidate struct {
	p        *providers.Provider
	entry    Entry // zero without a policy
	degraded bool
	eval     int
	// held marks a provider out for an open circuit alone, and nextProbe
	// is when that circuit probes.
	held      bool
	nextProbe time.Time
}

// Circuit is a provider's circuit breaker for a service, as routing
// honours it (docs/providers.md, Circuit breakers).
type Circuit struct {
	State breaker.State
	// Forced says an operator forced the state: the guard never takes a
	// forced-open provider back in play.
	Forced bool
	// NextProbe is when an open breaker lets probes through.
	NextProbe time.Time
}

// circuitOpen is the evaluation of a provider whose breaker is open ("" if
// it is not), and whether the guard may take it back in play (not forced).
func (req Request) circuitOpen(p *providers.Provider) (reason, message string, nextProbe time.Time, guardable bool) {
	if req.Circuit == nil {
		return "", "", time.Time{}, false
	}
	c := req.Circuit(p.ID)
	if c.State != breaker.Open {
		return "", "", time.Time{}, false
	}
	if c.Forced {
		return jobs.EvalCircuitOpen, fmt.Sprintf("an operator forced the circuit breaker of %s for %s open", p.ID, req.Needs.Service), time.Time{}, false
	}
	message = fmt.Sprintf("the circuit breaker of %s for %s is open", p.ID, req.Needs.Service)
	if !c.NextProbe.IsZero() {
		message += fmt.Sprintf(" until %s", c.NextProbe.UTC().Format(time.RFC3339))
	} else {
		message += "; its probe calls are taken"
	}
	return jobs.EvalCircuitOpen, message, c.NextProbe, true
}

// decideDefault routes a job no policy covers: every capable, available
// provider, active before degraded, cheapest first, catalog order on ties.
func decideDefault(req Request) (jobs.RoutingInfo, error) {
	info := req.info(jobs.ReasonDefault)
	info.PolicySource = jobs.SourceNone
	var evals []jobs.Evaluation
	var candidates, held []candidate
	for i, p := range req.Catalog {
		eval := jobs.Evaluation{ProviderID: p.ID, EvaluatedAt: req.Now}
		reason, message, degraded := req.screen(p)
		if reason == "" {
			reason, message = req.hold(p, &held, candidate{p: p, degraded: degraded, eval: len(evals), entry: Entry{Priority: i + 1}})
		}
		if reason != "" {
			eval.Reason, eval.Message = reason, message
		} else {
			candidates = append(candidates, candidate{p: p, degraded: degraded, eval: len(evals), entry: Entry{Priority: i + 1}})
		}
		evals = append(evals, eval)
	}
	if wait := req.waitFor(candidates, held, evals); wait != nil {
		return info, wait
	}
	return req.choose(info, evals, guard(candidates, held), StrategyPrice)
}

// decidePolicy routes by a policy: its entries are evaluated in ascending
// priority, every eligible one becomes a candidate, and the policy's
// strategy ranks the candidates (see docs/routing.md).
func decidePolicy(req Request) (jobs.RoutingInfo, error) {
	pol := req.Policy
	info := req.info(jobs.ReasonPolicyRule)
	info.PolicySource = req.Source
	if info.Reason == jobs.ReasonPolicyRule {
		// policy_id and policy_version only when the reason is policy_rule
		// (docs/routing.md, The routing record). A failover keeps the
		// version of the job's first decision, which carries them.
		info.PolicyID, info.PolicyVersion = pol.ID, pol.Version
	}
	entries := slices.Clone(pol.Providers)
	slices.SortStableFunc(entries, func(a, b Entry) int { return cmp.Compare(a.Priority, b.Priority) })
	var evals []jobs.Evaluation
	var candidates, held []candidate
	for _, entry := range entries {
		eval := jobs.Evaluation{ProviderID: entry.ProviderID, EvaluatedAt: req.Now}
		p, ok := lookup(req.Catalog, entry.ProviderID)
		if !ok {
			eval.Reason, eval.Message = jobs.EvalProviderDisabled, fmt.Sprintf("provider %s is no longer in the catalog", entry.ProviderID)
			evals = append(evals, eval)
			continue
		}
		reason, message, degraded := req.screen(p)
		if reason == "" {
			reason, message = req.conditionFailure(entry)
		}
		if reason == "" {
			reason, message = req.hold(p, &held, candidate{p: p, entry: entry, degraded: degraded, eval: len(evals)})
		}
		if reason != "" {
			eval.Reason, eval.Message = reason, message
		} else {
			candidates = append(candidates, candidate{p: p, entry: entry, degraded: degraded, eval: len(evals)})
		}
		evals = append(evals, eval)
	}
	if wait := req.waitFor(candidates, held, evals); wait != nil {
		return info, wait
	}
	return req.choose(info, evals, guard(candidates, held), pol.Strategy)
}

// hold screens an eligible provider's circuit breaker: open, it is out
// (circuit_open), and held for the guard unless an operator forced it.
func (req Request) hold(p *providers.Provider, held *[]candidate, c candidate) (reason, message string) {
	reason, message, nextProbe, guardable := req.circuitOpen(p)
	if guardable {
		c.nextProbe, c.held = nextProbe, true
		*held = append(*held, c)
	}
	return reason, message
}

// probeRetry is how soon a job waiting for an outage routes again when
// the probe calls of every provider it waits for are taken.
const probeRetry = 5 * time.Second

// waitFor is the wait of a job that may wait out an outage when no
// candidate is left but providers held for an open circuit: until the
// first of them probes. nil when the job does not wait.
func (req Request) waitFor(candidates, held []candidate, evals []jobs.Evaluation) *WaitError {
	if !req.WaitOutOutages || len(candidates) > 0 || len(held) == 0 {
		return nil
	}
	wait := &WaitError{Evaluations: evals}
	for _, c := range held {
		until := c.nextProbe
		if until.IsZero() || until.Before(req.Now) {
			until = req.Now.Add(probeRetry)
		}
		if wait.Until.IsZero() || until.Before(wait.Until) {
			wait.Until = until
		}
		wait.Providers = append(wait.Providers, c.p.ID)
		if slices.Contains(req.Failed, c.p.ID) {
			wait.Retry = append(wait.Retry, c.p.ID)
		}
	}
	return wait
}

// outageExplains reports whether p's failure in an earlier attempt is
// explained by its open breaker: the job may try it again once the breaker
// probes.
func (req Request) outageExplains(p *providers.Provider) bool {
	if !req.WaitOutOutages {
		return false
	}
	_, _, _, guardable := req.circuitOpen(p)
	return guardable
}

// guard keeps one provider in play when every eligible one is out for an
// open circuit alone (docs/providers.md, Circuit breakers): the held one
// that probes first, earliest priority on ties.
func guard(candidates, held []candidate) []candidate {
	if len(candidates) > 0 || len(held) == 0 {
		return candidates
	}
	first := held[0]
	for _, c := range held[1:] {
		if c.nextProbe.Before(first.nextProbe) {
			first = c
		}
	}
	return []candidate{first}
}

// choose ranks the candidates by strategy (active before degraded, priority
// on ties), selects the first and explains every verdict.
func (req Request) choose(info jobs.RoutingInfo, evals []jobs.Evaluation, candidates []candidate, strategy Strategy) (jobs.RoutingInfo, error) {
	if len(candidates) == 0 {
		return info, req.noCandidate(evals)
	}
	score := req.scorer(strategy, candidates)
	slices.SortStableFunc(candidates, func(a, b candidate) int {
		if a.degraded != b.degraded {
			if a.degraded {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(score(a), score(b)); c != 0 {
			return c
		}
		return cmp.Compare(a.entry.Priority, b.entry.Priority)
	})
	chosen := candidates[0]
	info.ProviderID = chosen.p.ID
	evals[chosen.eval].Selected = true
	evals[chosen.eval].Reason = jobs.EvalSelected
	evals[chosen.eval].Message = req.explain(strategy, chosen)
	if chosen.held {
		evals[chosen.eval].Message += "; its circuit breaker is open, but no other provider is left, so it is kept in play"
	}
	for _, c := range candidates[1:] {
		e := &evals[c.eval]
		if c.degraded {
			e.Reason, e.Message = jobs.EvalProviderDegraded, fmt.Sprintf("provider %s is degraded and ranked after active providers", c.p.ID)
			continue
		}
		e.Reason, e.Message = jobs.EvalNotChosen, fmt.Sprintf("eligible, but ranked below %s by %s", chosen.p.ID, strategy)
	}
	info.ProviderEvaluations = evals
	return info, nil
}

// scorer returns the strategy's ranking key: lower ranks first.
func (req Request) scorer(strategy Strategy, candidates []candidate) func(candidate) float64 {
	switch strategy {
	case StrategyLatency:
		return func(c candidate) float64 { return req.expectedLatency(c.p) }
	case StrategyQuality:
		return func(c candidate) float64 { return -c.p.Quality }
	case StrategyRoundRobin:
		turn := roundRobinPick(candidates, req.RoundRobinTurn)
		return func(c candidate) float64 {
			if c.p.ID == turn {
				return 0
			}
			return 1
		}
	default: // price
		return func(c candidate) float64 { return price(c.p, req.Needs.Service) }
	}
}

// expectedLatency is the observed latency of a provider for the service,
// else its catalog hint, else unknown (ranked last).
func (req Request) expectedLatency(p *providers.Provider) float64 {
	if req.Latency != nil {
		if ms, ok := req.Latency(p.ID); ok {
			return ms
		}
	}
	if p.LatencyMSHint > 0 {
		return float64(p.LatencyMSHint)
	}
	return math.Inf(1)
}

// roundRobinPick spreads turns over the candidates in proportion to their
// weights, interleaved (smooth weighted round robin): with weights 2 and 1
// the turns go A, B, A, A, B, A, ... The turn counter is shared by every
// worker, so the spread holds across the whole deployment.
func roundRobinPick(candidates []candidate, turn int64) string {
	ordered := slices.Clone(candidates)
	slices.SortStableFunc(ordered, func(a, b candidate) int { return cmp.Compare(a.entry.Priority, b.entry.Priority) })
	total := 0
	for _, c := range ordered {
		total += max(c.entry.Weight, 1)
	}
	current := make([]int, len(ordered))
	pick := 0
	for range turn%int64(total) + 1 {
		pick = 0
		for i, c := range ordered {
			current[i] += max(c.entry.Weight, 1)
			if current[i] > current[pick] {
				pick = i
			}
		}
		current[pick] -= total
	}
	return ordered[pick].p.ID
}

func (req Request) explain(strategy Strategy, c candidate) string {
	switch strategy {
	case StrategyLatency:
		if ms := req.expectedLatency(c.p); !math.IsInf(ms, 1) {
			return fmt.Sprintf("lowest expected latency (%.0f ms)", ms)
		}
		return "no latency known for any candidate; first by priority"
	case StrategyQuality:
		return fmt.Sprintf("highest quality score (%g)", c.p.Quality)
	case StrategyRoundRobin:
		return fmt.Sprintf("its round-robin turn (weight %d)", max(c.entry.Weight, 1))
	default:
		pricing := c.p.Services[req.Needs.Service].Pricing
		return fmt.Sprintf("cheapest eligible provider (%g %s %s)", pricing.Amount, pricing.Currency, pricing.Unit)
	}
}

// screen applies the checks every automatic candidate must pass. It returns
// the evaluation reason that excludes the provider ("" when eligible) and
// whether it is degraded.
func (req Request) screen(p *providers.Provider) (reason, message string, degraded bool) {
	if reason, message := Unsupported(p, req.Needs); reason != "" {
		return reason, message, false
	}
	if slices.Contains(req.Failed, p.ID) && !req.outageExplains(p) {
		return jobs.EvalFailed, fmt.Sprintf("an earlier attempt on %s failed", p.ID), false
	}
	// The media's size and duration are facts of the job, like the
	// features it needs: they come before the provider's state.
	if reason, message := req.overLimit(p); reason != "" {
		return reason, message, false
	}
	providerStatus, serviceStatus := req.status(p)
	if providerStatus == providers.StatusDisabled {
		return jobs.EvalProviderDisabled, fmt.Sprintf("provider %s is disabled", p.ID), false
	}
	if serviceStatus == providers.StatusDisabled {
		return jobs.EvalProviderDisabled, fmt.Sprintf("provider %s is disabled for %s", p.ID, req.Needs.Service), false
	}
	if req.TenantAllows != nil && !req.TenantAllows(p.ID) {
		return jobs.EvalTenantProviderDisabled, fmt.Sprintf("provider %s is not enabled for the tenant", p.ID), false
	}
	if req.RateLimited != nil && req.RateLimited(p.ID) {
		return jobs.EvalRateLimited, fmt.Sprintf("provider %s is at its published request limit for %s", p.ID, req.Needs.Service), false
	}
	degraded = providerStatus == providers.StatusDegraded || serviceStatus == providers.StatusDegraded
	return "", "", degraded
}

// conditionFailure checks a policy entry's conditions. A file-size
// condition holds when the size is unknown (the provider still enforces its
// own limit); a language condition needs a known language.
func (req Request) conditionFailure(entry Entry) (reason, message string) {
	c := entry.Conditions
	if c == nil {
		return "", ""
	}
	if c.MaxFileSizeMB != nil && req.FileSizeMB != nil && *req.FileSizeMB > float64(*c.MaxFileSizeMB) {
		return jobs.EvalConditionFileSize, fmt.Sprintf("the media is %.1f MB; the policy sends at most %d MB to %s", *req.FileSizeMB, *c.MaxFileSizeMB, entry.ProviderID)
	}
	if len(c.Languages) > 0 {
		languages := req.Needs.JobLanguages()
		if len(languages) == 0 {
			return jobs.EvalConditionLanguage, fmt.Sprintf("the job's language is not known, and %s is limited to %v", entry.ProviderID, c.Languages)
		}
		for _, l := range languages {
			if !acceptsLanguage(c.Languages, l) {
				return jobs.EvalConditionLanguage, fmt.Sprintf("language %s is not among %v for %s", l, c.Languages, entry.ProviderID)
			}
		}
	}
	return "", ""
}

func (req Request) status(p *providers.Provider) (providers.Status, providers.Status) {
	if req.Status != nil {
		return req.Status(p)
	}
	return CatalogStatus(p, req.Needs.Service)
}

// CatalogStatus is a provider's status as the catalog file sets it.
func CatalogStatus(p *providers.Provider, service jobs.ServiceID) (provider, capability providers.Status) {
	provider, capability = p.Status, providers.StatusActive
	if provider == "" {
		provider = providers.StatusActive
	}
	if c, ok := p.Services[service]; ok && c.Status != "" {
		capability = c.Status
	}
	return provider, capability
}

func lookup(catalog []*providers.Provider, id string) (*providers.Provider, bool) {
	for _, p := range catalog {
		if p.ID == id {
			return p, true
		}
	}
	return nil, false
}

func price(p *providers.Provider, service jobs.ServiceID) float64 {
	if c, ok := p.Services[service]; ok {
		return c.Pricing.Amount
	}
	return math.Inf(1)
}

func (req Request) info(reason jobs.Reason) jobs.RoutingInfo {
	attempt := max(req.Attempt, 1)
	if attempt > 1 && !req.Retried {
		reason = jobs.ReasonFailover
	}
	return jobs.RoutingInfo{Reason: reason, Attempt: attempt, DecidedAt: req.Now}
}

// overLimit checks the capability's published limits against the media
// (docs/routing.md, Media limits); unknown size or duration passes.
func (req Request) overLimit(p *providers.Provider) (reason, message string) {
	c, ok := p.Services[req.Needs.Service]
	if !ok {
		return "", ""
	}
	if limit := c.Limits.MaxFileSizeMB; limit > 0 && req.FileSizeMB != nil && *req.FileSizeMB > float64(limit) {
		return jobs.EvalLimitFileSize, fmt.Sprintf("the media is %.1f MB; %s takes at most %d MB for %s", *req.FileSizeMB, p.ID, limit, req.Needs.Service)
	}
	if limit := c.Limits.MaxDurationSeconds; limit > 0 && req.DurationSeconds != nil && *req.DurationSeconds > float64(limit) {
		return jobs.EvalLimitDuration, fmt.Sprintf("the media lasts %s; %s takes at most %s for %s",
			seconds(*req.DurationSeconds), p.ID, seconds(float64(limit)), req.Needs.Service)
	}
	return "", ""
}

func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}

// noCandidate is the error of a decision that found no provider. When the
// media's size (or length) alone excluded every provider left, the job
// fails with FILE_TOO_LARGE (or MEDIA_TOO_LONG): no provider can take it,
// and the code says why.
func (req Request) noCandidate(evals []jobs.Evaluation) error {
	code := jobs.CodeNoEligibleProvider
	if len(req.Failed) > 0 {
		code = jobs.CodeProvidersExhausted
	}
	if limit := onlyLimit(evals); limit != "" {
		code = limit
	}
	return &NoCandidateError{Code: code, Evaluations: evals}
}

// onlyLimit is the job error code when every evaluation that is not an
// earlier failure was a media limit of one kind; "" otherwise.
func onlyLimit(evals []jobs.Evaluation) string {
	code := ""
	for _, e := range evals {
		var c string
		switch e.Reason {
		case jobs.EvalFailed:
			continue
		case jobs.EvalLimitFileSize:
			c = jobs.CodeFileTooLarge
		case jobs.EvalLimitDuration:
			c = jobs.CodeMediaTooLong
		default:
			return ""
		}
		if code != "" && code != c {
			return ""
		}
		code = c
	}
	return code
}
