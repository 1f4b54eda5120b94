package policy_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/breaker"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
)

func circuits(m map[string]policy.Circuit) func(string) policy.Circuit {
	return func(id string) policy.Circuit {
		if c, ok := m[id]; ok {
			return c
		}
		return policy.Circuit{State: breaker.Closed}
	}
}

func TestOpenCircuitIsScreenedOut(t *testing.T) {
	t.Parallel()
	probe := now.Add(30 * time.Second)
	info, err := policy.Decide(policy.Request{Needs: needs(), Catalog: catalog(), Now: now,
		Circuit: circuits(map[string]policy.Circuit{"cheap": {State: breaker.Open, NextProbe: probe}})})
	require.NoError(t, err)
	require.Equal(t, "mid", info.ProviderID, "the cheapest is open: the next cheapest")
	e := evaluation(t, info, "cheap")
	require.Equal(t, jobs.EvalCircuitOpen, e.Reason)
	require.Contains(t, e.Message, "open until 2026-11-21T12:00:30Z")

	// A half-open breaker is a candidate: DecideRoute takes its probe.
	info, err = policy.Decide(policy.Request{Needs: needs(), Catalog: catalog(), Now: now,
		Circuit: circuits(map[string]policy.Circuit{"cheap": {State: breaker.HalfOpen}})})
	require.NoError(t, err)
	require.Equal(t, "cheap", info.ProviderID)
}

func TestOpenCircuitUnderPolicy(t *testing.T) {
	t.Parallel()
	pol := &policy.Policy{ID: "p", Version: 1, Strategy: policy.StrategyQuality, Providers: []policy.Entry{
		{ProviderID: "pricey", Priority: 1}, {ProviderID: "mid", Priority: 2},
	}}
	info, err := policy.Decide(policy.Request{Needs: needs(), Catalog: catalog(), Now: now, Policy: pol, Source: jobs.SourceTenantLatest,
		Circuit: circuits(map[string]policy.Circuit{"pricey": {State: breaker.Open, NextProbe: now.Add(time.Minute)}})})
	require.NoError(t, err)
	require.Equal(t, "mid", info.ProviderID)
	require.Equal(t, jobs.EvalCircuitOpen, evaluation(t, info, "pricey").Reason)
}

func TestGuardKeepsOneProviderInPlay(t *testing.T) {
	t.Parallel()
	open := map[string]policy.Circuit{
		"pricey": {State: breaker.Open, NextProbe: now.Add(20 * time.Second)},
		"cheap":  {State: breaker.Open, NextProbe: now.Add(40 * time.Second)},
		"mid":    {State: breaker.Open, NextProbe: now.Add(10 * time.Second)},
	}
	info, err := policy.Decide(policy.Request{Needs: needs(), Catalog: catalog(), Now: now, Circuit: circuits(open)})
	require.NoError(t, err, "every provider open for its error rate: one stays in play")
	require.Equal(t, "mid", info.ProviderID, "the one that probes first")
	require.Contains(t, evaluation(t, info, "mid").Message, "kept in play")
	require.Equal(t, jobs.EvalCircuitOpen, evaluation(t, info, "cheap").Reason)
	require.Equal(t, jobs.EvalCircuitOpen, evaluation(t, info, "pricey").Reason)

	// An operator's forced open is never overridden, nor is a status.
	open["mid"] = policy.Circuit{State: breaker.Open, Forced: true}
	info, err = policy.Decide(policy.Request{Needs: needs(), Catalog: catalog(), Now: now, Circuit: circuits(open)})
	require.NoError(t, err)
	require.Equal(t, "pricey", info.ProviderID)
	require.Contains(t, evaluation(t, info, "mid").Message, "an operator forced")

	for id := range open {
		open[id] = policy.Circuit{State: breaker.Open, Forced: true}
	}
	_, err = policy.Decide(policy.Request{Needs: needs(), Catalog: catalog(), Now: now, Circuit: circuits(open)})
	var nc *policy.NoCandidateError
	require.True(t, errors.As(err, &nc))
	require.Equal(t, jobs.CodeNoEligibleProvider, nc.Code)
}

func TestStatusWinsOverCircuit(t *testing.T) {
	t.Parallel()
	info, err := policy.Decide(policy.Request{Needs: needs(), Catalog: catalog(), Now: now,
		Status: func(p *providers.Provider) (providers.Status, providers.Status) {
			if p.ID == "cheap" {
				return providers.StatusDisabled, providers.StatusDisabled
			}
			return providers.StatusActive, providers.StatusActive
		},
		Circuit: circuits(map[string]policy.Circuit{
			"cheap":  {State: breaker.Closed, Forced: true},
			"mid":    {State: breaker.Open, NextProbe: now.Add(time.Minute)},
			"pricey": {State: breaker.Open, NextProbe: now.Add(time.Minute)},
		})})
	require.NoError(t, err)
	require.Equal(t, jobs.EvalProviderDisabled, evaluation(t, info, "cheap").Reason, "disabled stays disabled, even forced closed")
	require.Equal(t, "pricey", info.ProviderID, "the guard keeps one of the open ones, first by priority on a tie")
}

func TestExplicitProviderIgnoresTheCircuit(t *testing.T) {
	t.Parallel()
	info, err := policy.Decide(policy.Request{Needs: needs(), Catalog: catalog(), Now: now, Explicit: "cheap",
		Circuit: circuits(map[string]policy.Circuit{"cheap": {State: breaker.Open, Forced: true}})})
	require.NoError(t, err)
	require.Equal(t, "cheap", info.ProviderID)
}

func TestJobsThatMayWaitWaitForTheFirstProbe(t *testing.T) {
	t.Parallel()
	open := map[string]policy.Circuit{
		"pricey": {State: breaker.Open, NextProbe: now.Add(20 * time.Second)},
		"cheap":  {State: breaker.Open, NextProbe: now.Add(40 * time.Second)},
		"mid":    {State: breaker.Open, NextProbe: now.Add(10 * time.Second)},
	}
	req := policy.Request{Needs: needs(), Catalog: catalog(), Now: now, Circuit: circuits(open), WaitOutOutages: true}
	_, err := policy.Decide(req)
	var wait *policy.WaitError
	require.ErrorAs(t, err, &wait, "every provider open: wait instead of keeping one in play")
	require.Equal(t, now.Add(10*time.Second), wait.Until, "until the first probes")
	require.ElementsMatch(t, []string{"pricey", "cheap", "mid"}, wait.Providers)
	require.Empty(t, wait.Retry)
	for _, id := range wait.Providers {
		require.True(t, slices.ContainsFunc(wait.Evaluations, func(e jobs.Evaluation) bool {
			return e.ProviderID == id && e.Reason == jobs.EvalCircuitOpen
		}), id)
	}

	// A provider the job failed on counts while its breaker is open, and
	// is tried again after the wait; one whose breaker is closed is not.
	req.Failed = []string{"mid", "cheap"}
	open["cheap"] = policy.Circuit{State: breaker.Closed}
	_, err = policy.Decide(req)
	require.ErrorAs(t, err, &wait)
	require.ElementsMatch(t, []string{"pricey", "mid"}, wait.Providers)
	require.Equal(t, []string{"mid"}, wait.Retry)

	// Probes taken (no probe time): a short wait.
	open = map[string]policy.Circuit{"pricey": {State: breaker.Open}, "cheap": {State: breaker.Open}, "mid": {State: breaker.Open}}
	req.Failed, req.Circuit = nil, circuits(open)
	_, err = policy.Decide(req)
	require.ErrorAs(t, err, &wait)
	require.Equal(t, now.Add(5*time.Second), wait.Until)

	// Forced open by an operator: nothing to wait for.
	for id := range open {
		open[id] = policy.Circuit{State: breaker.Open, Forced: true}
	}
	_, err = policy.Decide(req)
	var nc *policy.NoCandidateError
	require.ErrorAs(t, err, &nc)

	// One provider left: no wait.
	open["cheap"] = policy.Circuit{State: breaker.Closed}
	info, err := policy.Decide(req)
	require.NoError(t, err)
	require.Equal(t, "cheap", info.ProviderID)
}
