package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/breaker"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/store"
)

// Administrative writes record their audit event in their transaction:
// who, what, the members they changed, the request; the log reads per
// tenant, by action, actor and target, newest first, in pages.
func TestAuditEventsOfAdministrativeWrites(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		alice := store.WithActor(ctx, store.Actor{Subject: "alice", RequestID: "req-1"})
		key := store.WithActor(ctx, store.Actor{Subject: "key:aaaaaaaaaaaaaaaa", RequestID: "req-2"})

		p, err := s.Routing.CreatePolicy(alice, newPolicy("acme", "", jobs.Transcriptions))
		require.NoError(t, err)
		_, err = s.Routing.UpdatePolicy(key, p.ID, func(current policy.Policy) (policy.Policy, error) {
			current.Strategy = policy.StrategyLatency
			return current, nil
		})
		require.NoError(t, err)
		admin := store.WithActor(ctx, store.Actor{Subject: "root"})
		_, err = s.Breakers.ForceBreaker(admin, store.BreakerKey{ProviderID: "flaky", Service: jobs.LLMTasks}, breaker.Open, "root", time.Now())
		require.NoError(t, err)
		require.NoError(t, s.Routing.CreateTenant(admin, &store.Tenant{ID: "globex"}))
		_, err = s.Routing.UpdateTenant(admin, "globex", func(t *store.Tenant) error {
			n := 5
			t.MaxInFlight = &n
			return nil
		})
		require.NoError(t, err)
		require.NoError(t, s.APIKeys.CreateAPIKey(ctx, &store.APIKey{ID: "bbbbbbbbbbbbbbbb", Tenant: "acme", Name: "ci",
			Scopes: []string{"llm-tasks:write"}, SecretHash: []byte("secret hash"), CreatedBy: "alice", CreatedAt: time.Now()}))

		acme := "acme"
		events, err := s.Audit.AuditEvents(ctx, store.AuditQuery{Tenant: &acme, Limit: 10})
		require.NoError(t, err)
		require.Len(t, events, 3, "acme's: the key and the policy's two")
		created, updated := events[2], events[1]
		require.Equal(t, "api_key.create", events[0].Action)
		require.Equal(t, "system", events[0].Actor, "a write without a caller is the system's")
		require.Subset(t, []string{"name", "scopes", "application", "expires_at", "limits", "revoked_at"}, keysOf(events[0].Changes),
			"what the log shows of a key: never a secret's hash")
		require.Contains(t, keysOf(events[0].Changes), "name")

		require.Equal(t, "policy.create", created.Action)
		require.Equal(t, "alice", created.Actor)
		require.Equal(t, "req-1", created.RequestID)
		require.Equal(t, "policy/"+p.ID, created.Target)
		require.JSONEq(t, `null`, string(created.Changes["routing_strategy"].Before))
		require.JSONEq(t, `"price"`, string(created.Changes["routing_strategy"].After))

		require.Equal(t, "policy.update", updated.Action)
		require.Equal(t, "key:aaaaaaaaaaaaaaaa", updated.Actor)
		require.Equal(t, map[string]store.AuditChange{
			"routing_strategy": {Before: json.RawMessage(`"price"`), After: json.RawMessage(`"latency"`)},
			"version":          {Before: json.RawMessage(`1`), After: json.RawMessage(`2`)},
		}, updated.Changes, "only what changed")

		all, err := s.Audit.AuditEvents(ctx, store.AuditQuery{Limit: 10})
		require.NoError(t, err)
		require.Len(t, all, 6)
		force := all[3]
		require.Equal(t, "breaker.force", force.Action)
		require.Equal(t, "", force.Tenant, "a provider's breaker is the gateway's")
		require.Equal(t, "breaker/flaky/llm-tasks", force.Target)
		require.JSONEq(t, `"auto"`, string(force.Changes["forced"].Before))
		require.JSONEq(t, `"open"`, string(force.Changes["forced"].After))
		require.JSONEq(t, `5`, string(all[1].Changes["max_in_flight"].After))

		byActor, err := s.Audit.AuditEvents(ctx, store.AuditQuery{Actor: "root", Limit: 10})
		require.NoError(t, err)
		require.Len(t, byActor, 3)
		byTarget, err := s.Audit.AuditEvents(ctx, store.AuditQuery{Target: "policy/" + p.ID, Action: "policy.update", Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []string{updated.ID}, eventIDs(byTarget))

		page, err := s.Audit.AuditEvents(ctx, store.AuditQuery{Limit: 4})
		require.NoError(t, err)
		rest, err := s.Audit.AuditEvents(ctx, store.AuditQuery{Limit: 4, Before: page[3].ID})
		require.NoError(t, err)
		require.Equal(t, eventIDs(all), append(eventIDs(page), eventIDs(rest)...), "pages follow each other")
		later, err := s.Audit.AuditEvents(ctx, store.AuditQuery{From: time.Now().Add(time.Minute), Limit: 10})
		require.NoError(t, err)
		require.Empty(t, later)

		// A policy a super-admin moves to another tenant: the first sees
		// it leave, the second arrive, without the first's settings of it.
		moved, err := s.Routing.CreatePolicy(ctx, newPolicy("initech", "", jobs.Transcriptions))
		require.NoError(t, err)
		_, err = s.Routing.UpdatePolicy(admin, moved.ID, func(current policy.Policy) (policy.Policy, error) {
			current.Tenant, current.Strategy = "globex", policy.StrategyLatency
			return current, nil
		})
		require.NoError(t, err)
		initech, globex := "initech", "globex"
		left, err := s.Audit.AuditEvents(ctx, store.AuditQuery{Tenant: &initech, Action: "policy.update", Limit: 10})
		require.NoError(t, err)
		require.Len(t, left, 1)
		require.Equal(t, map[string]store.AuditChange{"tenant": {Before: json.RawMessage(`"initech"`), After: json.RawMessage(`"globex"`)}}, left[0].Changes)
		arrived, err := s.Audit.AuditEvents(ctx, store.AuditQuery{Tenant: &globex, Action: "policy.update", Limit: 10})
		require.NoError(t, err)
		require.Len(t, arrived, 1)
		require.JSONEq(t, `"initech"`, string(arrived[0].Changes["tenant"].Before))
		require.JSONEq(t, `null`, string(arrived[0].Changes["routing_strategy"].Before), "not initech's setting")
		require.JSONEq(t, `"latency"`, string(arrived[0].Changes["routing_strategy"].After))
		events, err = s.Audit.AuditEvents(ctx, store.AuditQuery{Limit: 100})
		require.NoError(t, err)
		total := len(events)

		// A write that fails records nothing.
		_, err = s.Routing.UpdatePolicy(alice, p.ID, func(policy.Policy) (policy.Policy, error) { return policy.Policy{}, store.ErrConflict })
		require.ErrorIs(t, err, store.ErrConflict)
		again, err := s.Audit.AuditEvents(ctx, store.AuditQuery{Limit: 100})
		require.NoError(t, err)
		require.Len(t, again, total)
	})
}

func eventIDs(events []store.AuditEvent) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.ID
	}
	return out
}

func keysOf(m map[string]store.AuditChange) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Audit events go with their tenant's job retention: its own, else the
// deployment's, which also keeps the gateway's own; 0 keeps them.
func TestDeleteExpiredAuditEvents(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		hour, forever := time.Hour, time.Duration(0)
		require.NoError(t, s.Routing.CreateTenant(ctx, &store.Tenant{ID: "acme", Retention: store.Retention{Jobs: &hour}}))
		require.NoError(t, s.Routing.CreateTenant(ctx, &store.Tenant{ID: "keeper", Retention: store.Retention{Jobs: &forever}}))
		for _, tenant := range []string{"acme", "keeper", "globex", ""} {
			require.NoError(t, s.Audit.RecordAuditEvent(ctx, store.AuditEntry{Tenant: tenant, Action: "job.retry", Target: "job/x"}))
		}
		count := func(tenant string) int {
			events, err := s.Audit.AuditEvents(ctx, store.AuditQuery{Tenant: &tenant, Limit: 100})
			require.NoError(t, err)
			return len(events)
		}
		later := time.Now().Add(2 * time.Hour)
		n, err := s.Audit.DeleteExpiredAuditEvents(ctx, store.RetentionDefaults{Jobs: 3 * time.Hour}, later)
		require.NoError(t, err)
		require.EqualValues(t, 2, n, "acme's event and its tenant.create, past its own hour")
		require.Equal(t, 0, count("acme"))
		require.Equal(t, 1, count("globex"), "within the deployment's 3 h")
		n, err = s.Audit.DeleteExpiredAuditEvents(ctx, store.RetentionDefaults{Jobs: time.Hour}, later)
		require.NoError(t, err)
		require.EqualValues(t, 2, n, "globex's and the gateway's")
		require.Equal(t, 0, count("globex"))
		require.Equal(t, 0, count(""))
		require.Equal(t, 2, count("keeper"), "kept forever: its event and its tenant.create")
		n, err = s.Audit.DeleteExpiredAuditEvents(ctx, store.RetentionDefaults{}, later.Add(1000*time.Hour))
		require.NoError(t, err)
		require.Zero(t, n, "the deployment keeps forever")
	})
}
