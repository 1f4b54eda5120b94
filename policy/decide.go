package policy

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ai-job-gateway/gateway/providers"
)

// Error codes of a job that could not be routed.
const (
	CodeNoEligibleProvider = "NO_ELIGIBLE_PROVIDER"
	CodeProvidersExhausted = "PROVIDERS_EXHAUSTED"
)

// NoCandidateError says that no provider is left for a job.
type NoCandidateError struct {
	// Code is NO_ELIGIBLE_PROVIDER on the first attempt and
	// PROVIDERS_EXHAUSTED once a provider has failed.
	Code        string
	Evaluations []Evaluation
}

func (e *NoCandidateError) Error() string {
	if e.Code == CodeProvidersExhausted {
		return "every candidate provider failed"
	}
	return "no provider is eligible for this job"
}

// ErrNoCandidate matches any *NoCandidateError with errors.Is.
var ErrNoCandidate = errors.New("no candidate provider")

// Is makes errors.Is(err, ErrNoCandidate) true.
func (e *NoCandidateError) Is(target error) bool { return target == ErrNoCandidate }

// Request is everything one routing decision depends on.
type Request struct {
	Needs Requirements
	// Catalog lists the providers in catalog order.
	Catalog []*providers.Provider
	// Status gives the effective provider-level status and the status of
	// the provider's capability for the job's service.
	Status func(p *providers.Provider) (provider, service providers.Status)
	// TenantAllows reports whether the job's tenant may use a provider.
	TenantAllows func(providerID string) bool
	// Explicit is the provider the job named, if any.
	Explicit string
	// Failed lists providers an earlier attempt of this job failed on.
	Failed []string
	// Attempt numbers this decision, from 1.
	Attempt int
	Now     time.Time
}

// Decide picks the provider for one attempt of a job.
func Decide(req Request) (RoutingInfo, error) {
	if req.Explicit != "" {
		return decideExplicit(req)
	}
	return decideDefault(req)
}

// decideExplicit honours the provider the job named. Its status no longer
// matters once the job was accepted ("accepted jobs keep running"); only an
// earlier failure removes it.
func decideExplicit(req Request) (RoutingInfo, error) {
	info := req.info(ReasonExplicitChoice, SourceNone)
	eval := Evaluation{ProviderID: req.Explicit, EvaluatedAt: req.Now}
	if slices.Contains(req.Failed, req.Explicit) {
		eval.Reason, eval.Message = EvalFailed, fmt.Sprintf("an earlier attempt on %s failed", req.Explicit)
		return info, req.noCandidate([]Evaluation{eval})
	}
	eval.Selected, eval.Reason, eval.Message = true, EvalSelected, fmt.Sprintf("the job named provider %s", req.Explicit)
	info.ProviderID = req.Explicit
	info.ProviderEvaluations = []Evaluation{eval}
	return info, nil
}

// decideDefault routes a job no policy covers: every capable, available
// provider, active before degraded, cheapest first, catalog order on ties.
func decideDefault(req Request) (RoutingInfo, error) {
	info := req.info(ReasonDefault, SourceNone)
	type candidate struct {
		p        *providers.Provider
		degraded bool
		eval     int
	}
	var (
		evals      []Evaluation
		candidates []candidate
	)
	for _, p := range req.Catalog {
		eval := Evaluation{ProviderID: p.ID, EvaluatedAt: req.Now}
		reason, message, degraded := req.screen(p)
		if reason != "" {
			eval.Reason, eval.Message = reason, message
			evals = append(evals, eval)
			continue
		}
		candidates = append(candidates, candidate{p: p, degraded: degraded, eval: len(evals)})
		evals = append(evals, eval)
	}
	if len(candidates) == 0 {
		return info, req.noCandidate(evals)
	}
	slices.SortStableFunc(candidates, func(a, b candidate) int {
		if a.degraded != b.degraded {
			if a.degraded {
				return 1
			}
			return -1
		}
		return cmp.Compare(price(a.p, req.Needs.Service), price(b.p, req.Needs.Service))
	})
	chosen := candidates[0]
	info.ProviderID = chosen.p.ID
	evals[chosen.eval].Selected = true
	evals[chosen.eval].Reason = EvalSelected
	evals[chosen.eval].Message = fmt.Sprintf("cheapest available provider (%s %g %s)",
		chosen.p.Services[req.Needs.Service].Pricing.Unit, price(chosen.p, req.Needs.Service), chosen.p.Services[req.Needs.Service].Pricing.Currency)
	for _, c := range candidates[1:] {
		e := &evals[c.eval]
		if c.degraded {
			e.Reason, e.Message = EvalProviderDegraded, fmt.Sprintf("provider %s is degraded and ranked after active providers", c.p.ID)
			continue
		}
		e.Reason, e.Message = EvalNotChosen, fmt.Sprintf("eligible, but %s is cheaper", chosen.p.ID)
	}
	info.ProviderEvaluations = evals
	return info, nil
}

// screen applies the checks every automatic candidate must pass. It returns
// the evaluation reason that excludes the provider ("" when eligible) and
// whether it is degraded.
func (req Request) screen(p *providers.Provider) (reason, message string, degraded bool) {
	if reason, message := Unsupported(p, req.Needs); reason != "" {
		return reason, message, false
	}
	if slices.Contains(req.Failed, p.ID) {
		return EvalFailed, fmt.Sprintf("an earlier attempt on %s failed", p.ID), false
	}
	providerStatus, serviceStatus := req.status(p)
	if providerStatus == providers.StatusDisabled {
		return EvalProviderDisabled, fmt.Sprintf("provider %s is disabled", p.ID), false
	}
	if serviceStatus == providers.StatusDisabled {
		return EvalProviderDisabled, fmt.Sprintf("provider %s is disabled for %s", p.ID, req.Needs.Service), false
	}
	if req.TenantAllows != nil && !req.TenantAllows(p.ID) {
		return EvalTenantProviderDisabled, fmt.Sprintf("provider %s is not enabled for the tenant", p.ID), false
	}
	degraded = providerStatus == providers.StatusDegraded || serviceStatus == providers.StatusDegraded
	return "", "", degraded
}

func (req Request) status(p *providers.Provider) (providers.Status, providers.Status) {
	if req.Status != nil {
		return req.Status(p)
	}
	return CatalogStatus(p, req.Needs.Service)
}

// CatalogStatus is a provider's status as the catalog file sets it.
func CatalogStatus(p *providers.Provider, service providers.ServiceID) (provider, capability providers.Status) {
	provider, capability = p.Status, providers.StatusActive
	if provider == "" {
		provider = providers.StatusActive
	}
	if c, ok := p.Services[service]; ok && c.Status != "" {
		capability = c.Status
	}
	return provider, capability
}

func price(p *providers.Provider, service providers.ServiceID) float64 {
	return p.Services[service].Pricing.Amount
}

func (req Request) info(reason Reason, source Source) RoutingInfo {
	attempt := max(req.Attempt, 1)
	if attempt > 1 {
		reason = ReasonFailover
	}
	info := RoutingInfo{Reason: reason, Attempt: attempt, DecidedAt: req.Now}
	if source != SourceNone || reason == ReasonDefault || (reason == ReasonFailover && req.Explicit == "") {
		info.PolicySource = source
	}
	return info
}

func (req Request) noCandidate(evals []Evaluation) error {
	code := CodeNoEligibleProvider
	if len(req.Failed) > 0 {
		code = CodeProvidersExhausted
	}
	return &NoCandidateError{Code: code, Evaluations: evals}
}
