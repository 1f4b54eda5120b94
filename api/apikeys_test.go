package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/app/budgets"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// keyPattern is what an issued key looks like (docs/api.md, API keys).
var keyPattern = regexp.MustCompile(`^gwk_([a-z2-7]{16})_[a-z2-7]{52}$`)

func newKeyBody(attributes map[string]any) map[string]any {
	return map[string]any{"data": map[string]any{"type": "api-key", "attributes": attributes}}
}

// issueKey creates a key with token and returns its id and secret.
func issueKey(t *testing.T, b *bundle, token string, attributes map[string]any) (id, secret string) {
	t.Helper()
	r := b.do(t, http.MethodPost, "/v1/api-keys", token, newKeyBody(attributes))
	r.requireStatus(t, http.StatusCreated)
	data := r.data(t)
	attrs := data["attributes"].(map[string]any)
	secret, _ = attrs["secret"].(string)
	m := keyPattern.FindStringSubmatch(secret)
	require.NotNil(t, m, "the key's form: %q", secret)
	require.Equal(t, data["id"], m[1], "the key's id part is its id")
	require.Equal(t, "/v1/api-keys/"+m[1], r.Header.Get("Location"))
	return m[1], secret
}

// TestAPIKeyRunsAJobAsItsTenant: a key works where a token with the same
// tenant and scopes does, and the job records the key as its caller.
func TestAPIKeyRunsAJobAsItsTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.token(t, "keys:write", "keys:read", "llm-tasks:write", "llm-tasks:read")
	id, secret := issueKey(t, b, admin, map[string]any{"name": "ci pipeline", "scopes": []string{"llm-tasks:write", "llm-tasks:read"},
		"application": "billing"})

	job := b.create(t, "llm-tasks", secret, body(t, "llm-tasks"))
	rec, err := b.store.Jobs.GetJob(t.Context(), job["id"].(string))
	require.NoError(t, err)
	require.Equal(t, tenantA, rec.Tenant)
	require.Equal(t, "key:"+id, rec.UserID, "the caller is recorded as the key")
	require.Equal(t, "billing", rec.Application, "a key bound to an application creates that application's jobs")
	b.do(t, http.MethodGet, "/v1/llm-tasks/"+rec.ID, secret, nil).requireStatus(t, http.StatusOK)

	requireError(t, b.do(t, http.MethodPost, "/v1/llm-tasks", secret, body(t, "llm-tasks"), "X-Application", "other"),
		http.StatusForbidden, "FORBIDDEN")
	requireError(t, b.do(t, http.MethodPost, "/v1/transcriptions", secret, body(t, "transcriptions")),
		http.StatusForbidden, "INSUFFICIENT_SCOPE", "transcriptions:write")
	requireError(t, b.do(t, http.MethodGet, "/v1/api-keys", secret, nil), http.StatusForbidden, "INSUFFICIENT_SCOPE", "keys:read")
}

// TestAPIKeyListShowsNoSecret: the secret is shown once, at creation.
func TestAPIKeyListShowsNoSecret(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.token(t, "keys:write", "keys:read", "llm-tasks:read")
	expires := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	first, secret := issueKey(t, b, admin, map[string]any{"name": "first", "scopes": []string{"llm-tasks:read"},
		"expires_at": expires.Format(time.RFC3339)})
	second, _ := issueKey(t, b, admin, map[string]any{"name": "second", "scopes": []string{"llm-tasks:read"}})

	r := b.do(t, http.MethodGet, "/v1/api-keys", admin, nil)
	r.requireStatus(t, http.StatusOK)
	require.NotContains(t, string(r.Body), secret[len("gwk_"):], "no secret in the list")
	require.NotContains(t, string(r.Body), `"secret"`)
	list := r.object(t)["data"].([]any)
	require.Len(t, list, 2)
	require.Equal(t, second, list[0].(map[string]any)["id"], "newest first")
	attrs := list[1].(map[string]any)["attributes"].(map[string]any)
	require.Equal(t, "first", attrs["name"])
	require.Equal(t, tenantA, attrs["tenant"])
	require.Equal(t, userA, attrs["created_by"])
	require.Equal(t, expires.Format(time.RFC3339), attrs["expires_at"])

	one := b.do(t, http.MethodGet, "/v1/api-keys/"+first, admin, nil)
	one.requireStatus(t, http.StatusOK)
	require.NotContains(t, string(one.Body), `"secret"`)
	used := one.data(t)["attributes"].(map[string]any)
	require.Nil(t, used["last_used_at"], "not used yet")

	b.do(t, http.MethodGet, "/v1/llm-tasks?page[size]=1", secret, nil)
	b.do(t, http.MethodGet, "/v1/jobs", secret, nil)
	used = b.do(t, http.MethodGet, "/v1/api-keys/"+first, admin, nil).data(t)["attributes"].(map[string]any)
	require.NotNil(t, used["last_used_at"], "a request with the key records its use")
}

// TestAPIKeyOfAnotherTenantIsNotFound: keys are the tenant's own.
func TestAPIKeyOfAnotherTenantIsNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id, _ := issueKey(t, b, b.token(t, "keys:write", "llm-tasks:read"), map[string]any{"name": "acme's", "scopes": []string{"llm-tasks:read"}})
	other := b.tokenFor(t, "globex", "bob", "keys:write", "keys:read")
	requireError(t, b.do(t, http.MethodGet, "/v1/api-keys/"+id, other, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, b.do(t, http.MethodDelete, "/v1/api-keys/"+id, other, nil), http.StatusNotFound, "NOT_FOUND")
	requireError(t, b.do(t, http.MethodPost, "/v1/api-keys/"+id+"/rotate", other, nil), http.StatusNotFound, "NOT_FOUND")
	list := b.do(t, http.MethodGet, "/v1/api-keys", other, nil)
	list.requireStatus(t, http.StatusOK)
	require.Empty(t, list.object(t)["data"])

	requireError(t, b.do(t, http.MethodPost, "/v1/api-keys", b.token(t, "keys:write", "llm-tasks:read"),
		newKeyBody(map[string]any{"name": "x", "scopes": []string{"llm-tasks:read"}, "tenant": "globex"})),
		http.StatusForbidden, "FORBIDDEN")
}

// TestAPIKeyScopesAreTheCreatorsAtMost: a key gets no scope its creator
// lacks, and bad input names its member.
func TestAPIKeyScopesAreTheCreatorsAtMost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.token(t, "keys:write", "llm-tasks:read")
	msg := requireError(t, b.do(t, http.MethodPost, "/v1/api-keys", admin,
		newKeyBody(map[string]any{"name": "x", "scopes": []string{"llm-tasks:read", "llm-tasks:write"}})), http.StatusForbidden, "FORBIDDEN")
	require.Contains(t, msg, "llm-tasks:write")
	msg = requireError(t, b.do(t, http.MethodPost, "/v1/api-keys", b.token(t, "keys:write", "llm-tasks:read"),
		newKeyBody(map[string]any{"name": "x", "scopes": []string{"llm-tasks:read", "keys:write"}})), http.StatusForbidden, "FORBIDDEN")
	require.Contains(t, msg, "keys:write", "keys administer no keys")

	broad := b.token(t, "keys:write", "llm-tasks:read", "llm-tasks:write")
	id, _ := issueKey(t, b, broad, map[string]any{"name": "broad", "scopes": []string{"llm-tasks:read", "llm-tasks:write"}})
	msg = requireError(t, b.do(t, http.MethodPost, "/v1/api-keys/"+id+"/rotate", admin, nil), http.StatusForbidden, "FORBIDDEN")
	require.Contains(t, msg, "llm-tasks:write", "a caller without the key's scopes may not take its secret")

	for pointer, attributes := range map[string]map[string]any{
		"/data/attributes/name":        {"scopes": []string{"llm-tasks:read"}},
		"/data/attributes/scopes":      {"name": "x", "scopes": []string{}},
		"/data/attributes/scopes/1":    {"name": "x", "scopes": []string{"llm-tasks:read", "llm-tasks:read"}},
		"/data/attributes/expires_at":  {"name": "x", "scopes": []string{"llm-tasks:read"}, "expires_at": "2020-01-01T00:00:00Z"},
		"/data/attributes/application": {"name": "x", "scopes": []string{"llm-tasks:read"}, "application": "Not A Slug"},
		"/data/attributes/secret":      {"name": "x", "scopes": []string{"llm-tasks:read"}, "secret": "gwk_mine"},
	} {
		requireError(t, b.do(t, http.MethodPost, "/v1/api-keys", admin, newKeyBody(attributes)), http.StatusUnprocessableEntity,
			"VALIDATION_ERROR", pointer)
	}
}

// TestRevokedAndRotatedKeys: a revoked key is refused within a second; a
// rotated key's old secret works for the grace period named, the new one
// at once; made-up keys are refused without naming them.
func TestRevokedAndRotatedKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.token(t, "keys:write", "llm-tasks:read")
	id, secret := issueKey(t, b, admin, map[string]any{"name": "x", "scopes": []string{"llm-tasks:read"}})
	b.do(t, http.MethodGet, "/v1/jobs", secret, nil).requireStatus(t, http.StatusOK)

	r := b.do(t, http.MethodPost, "/v1/api-keys/"+id+"/rotate", admin,
		map[string]any{"data": map[string]any{"type": "api-key-rotation", "attributes": map[string]any{"grace_period_seconds": 3600}}})
	r.requireStatus(t, http.StatusOK)
	rotated := r.data(t)["attributes"].(map[string]any)
	fresh := rotated["secret"].(string)
	require.NotEqual(t, secret, fresh)
	require.NotNil(t, rotated["previous_secret_expires_at"])
	b.do(t, http.MethodGet, "/v1/jobs", fresh, nil).requireStatus(t, http.StatusOK)
	b.do(t, http.MethodGet, "/v1/jobs", secret, nil).requireStatus(t, http.StatusOK) // the rotation cleared this process's checked keys

	r = b.do(t, http.MethodPost, "/v1/api-keys/"+id+"/rotate", admin, nil) // no grace
	r.requireStatus(t, http.StatusOK)
	newest := r.data(t)["attributes"].(map[string]any)["secret"].(string)
	requireUnauthorizedWithin(t, b, fresh, time.Second)

	requireError(t, b.do(t, http.MethodPost, "/v1/api-keys/"+id+"/rotate", admin,
		map[string]any{"data": map[string]any{"type": "api-key-rotation", "attributes": map[string]any{"grace_period_seconds": 86401}}}),
		http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/grace_period_seconds")

	b.do(t, http.MethodGet, "/v1/jobs", newest, nil).requireStatus(t, http.StatusOK) // checked, so trusted for a while
	b.do(t, http.MethodDelete, "/v1/api-keys/"+id, admin, nil).requireStatus(t, http.StatusNoContent)
	requireUnauthorizedWithin(t, b, newest, time.Second)
	requireError(t, b.do(t, http.MethodDelete, "/v1/api-keys/"+id, admin, nil), http.StatusNotFound, "NOT_FOUND")

	for _, made := range []string{"gwk_zz", "gwk_" + strings.Repeat("a", 16) + "_" + strings.Repeat("b", 52), "gwk_" + id + "_" + strings.Repeat("c", 52)} {
		msg := requireError(t, b.do(t, http.MethodGet, "/v1/jobs", made, nil), http.StatusUnauthorized, "UNAUTHORIZED")
		require.NotContains(t, msg, made[4:], "the key is not echoed")
	}
}

// requireUnauthorizedWithin asks with key until it is refused 401, and
// fails if a request sent within longer after now was still accepted.
func requireUnauthorizedWithin(t *testing.T, b *bundle, key string, longer time.Duration) {
	t.Helper()
	since := time.Now()
	for {
		asked := time.Now()
		r := b.do(t, http.MethodGet, "/v1/jobs", key, nil)
		if r.Status == http.StatusUnauthorized {
			return
		}
		r.requireStatus(t, http.StatusOK)
		require.Less(t, asked.Sub(since), longer, "still accepted")
		time.Sleep(20 * time.Millisecond)
	}
}

// awayFromMinuteEnd waits out the last ten seconds of a minute, so that a
// test's requests fall in one per-minute window on a busy machine too.
func awayFromMinuteEnd() {
	if left := time.Minute - time.Since(time.Now().Truncate(time.Minute)); left < 10*time.Second {
		time.Sleep(left + 100*time.Millisecond)
	}
}

// TestAPIKeyRequestsPerMinute: a key's requests over its limit are
// refused 429 RATE_LIMITED with Retry-After, naming the limit.
func TestAPIKeyRequestsPerMinute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.token(t, "keys:write", "keys:read", "llm-tasks:read")
	id, secret := issueKey(t, b, admin, map[string]any{"name": "x", "scopes": []string{"llm-tasks:read"},
		"limits": map[string]any{"requests_per_minute": 3}})
	limits := b.do(t, http.MethodGet, "/v1/api-keys/"+id, admin, nil).data(t)["attributes"].(map[string]any)["limits"]
	require.Equal(t, map[string]any{"requests_per_minute": 3.0}, limits)
	awayFromMinuteEnd()
	for range 3 {
		b.do(t, http.MethodGet, "/v1/jobs", secret, nil).requireStatus(t, http.StatusOK)
	}
	r := b.do(t, http.MethodGet, "/v1/jobs", secret, nil)
	msg := requireError(t, r, http.StatusTooManyRequests, "RATE_LIMITED", "requests_per_minute")
	require.Contains(t, msg, "3")
	retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.True(t, retry >= 1 && retry <= 60, "Retry-After %d: until the next minute", retry)

	for pointer, limits := range map[string]any{
		"/data/attributes/limits/requests_per_minute": map[string]any{"requests_per_minute": 0},
		"/data/attributes/limits/max_in_flight":       map[string]any{"max_in_flight": 0},
		"/data/attributes/limits":                     "5",
	} {
		requireError(t, b.do(t, http.MethodPost, "/v1/api-keys", admin,
			newKeyBody(map[string]any{"name": "x", "scopes": []string{"llm-tasks:read"}, "limits": limits})),
			http.StatusUnprocessableEntity, "VALIDATION_ERROR", pointer)
	}
}

// TestOnlyKeysAreKeyCallers: a token's sub, or X-Effective-User-Id, may not
// pose as an API key (whose jobs' usage is the key's).
func TestOnlyKeysAreKeyCallers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	posing := b.mint(t, devidp.TokenRequest{Tenant: tenantA, Subject: "key:aaaaaaaaaaaaaaaa", Scopes: []string{"llm-tasks:read"}, Audience: audience})
	requireError(t, b.do(t, http.MethodGet, "/v1/jobs", posing, nil), http.StatusUnauthorized, "UNAUTHORIZED")
	admin := b.token(t, "llm-tasks:write", "admin:cross-tenant")
	requireError(t, b.do(t, http.MethodPost, "/v1/llm-tasks", admin, body(t, "llm-tasks"), "X-Effective-User-Id", "key:aaaaaaaaaaaaaaaa"),
		http.StatusUnprocessableEntity, "VALIDATION_ERROR", "X-Effective-User-Id")
}

// TestMaxInFlight: a key's and a tenant's max_in_flight refuse creates
// 429 RATE_LIMITED, naming the limit, while that many of their jobs are
// pending or processing; a job finished frees its place.
func TestMaxInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.token(t, "keys:write", "keys:read", "llm-tasks:write", "llm-tasks:read")
	id, key := issueKey(t, b, admin, map[string]any{"name": "x", "scopes": []string{"llm-tasks:write"},
		"limits": map[string]any{"max_in_flight": 2}})
	limits := b.do(t, http.MethodGet, "/v1/api-keys/"+id, admin, nil).data(t)["attributes"].(map[string]any)["limits"]
	require.Equal(t, map[string]any{"max_in_flight": 2.0}, limits)

	first := b.create(t, "llm-tasks", key, body(t, "llm-tasks"))["id"].(string)
	b.create(t, "llm-tasks", key, body(t, "llm-tasks"))
	r := b.do(t, http.MethodPost, "/v1/llm-tasks", key, body(t, "llm-tasks"))
	msg := requireError(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
	require.Contains(t, msg, "this API key's max_in_flight is 2")
	require.Equal(t, "1", r.Header.Get("Retry-After"))
	b.create(t, "llm-tasks", admin, body(t, "llm-tasks")) // the token's jobs are not the key's

	job, err := b.store.Jobs.GetJob(t.Context(), first)
	require.NoError(t, err)
	finished := time.Now().UTC()
	job.Status, job.Revision, job.CompletedAt, job.Result = jobs.StatusCompleted, job.Revision+1, &finished, `{"text":"ok"}`
	require.NoError(t, b.store.Jobs.SaveJob(t.Context(), job))
	b.create(t, "llm-tasks", key, body(t, "llm-tasks"))

	// The tenant has 3 jobs in flight (2 of the key, 1 of the token).
	super := superAdminToken(t, b)
	createTenantOK(t, b, tenantA, map[string]any{"max_in_flight": 3})
	r = b.do(t, http.MethodPost, "/v1/llm-tasks", admin, body(t, "llm-tasks"))
	msg = requireError(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
	require.Contains(t, msg, "tenant "+tenantA+"'s max_in_flight is 3")
	r = b.do(t, http.MethodPatch, "/v1/tenants/"+tenantA, super, tenantDoc(tenantA, map[string]any{"max_in_flight": 4}))
	r.requireStatus(t, http.StatusOK)
	require.EqualValues(t, 4, r.data(t)["attributes"].(map[string]any)["max_in_flight"])
	b.create(t, "llm-tasks", admin, body(t, "llm-tasks"))
	requireError(t, b.do(t, http.MethodPost, "/v1/llm-tasks", admin, body(t, "llm-tasks")), http.StatusTooManyRequests, "RATE_LIMITED")
	r = b.do(t, http.MethodPatch, "/v1/tenants/"+tenantA, super, tenantDoc(tenantA, map[string]any{"max_in_flight": nil}))
	r.requireStatus(t, http.StatusOK)
	require.Nil(t, r.data(t)["attributes"].(map[string]any)["max_in_flight"], "null: no bound")
	b.create(t, "llm-tasks", admin, body(t, "llm-tasks"))

	for _, bad := range []any{0, -1, 1.5, 1_000_001, "3", true} {
		requireError(t, b.do(t, http.MethodPatch, "/v1/tenants/"+tenantA, super, tenantDoc(tenantA, map[string]any{"max_in_flight": bad})),
			http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/max_in_flight")
	}
}

// TestAPIKeyTokensPerMinute: a key's llm-tasks reserve their estimate
// against its tokens_per_minute at create, refused 429 RATE_LIMITED when
// it does not fit the minute, and settle to their real count when billed.
func TestAPIKeyTokensPerMinute(t *testing.T) {
	t.Parallel()
	var opened *store.Store
	b := setupJobOps(t, sqliteInto(&opened), func(cfg *jobops.Config) {
		cfg.Budgets = &budgets.Reserver{Store: opened.Usage, Prices: providers.NewPriceBook(cfg.Catalog)}
	}, nil)
	admin := b.token(t, "keys:write", "keys:read", "llm-tasks:write")
	id, key := issueKey(t, b, admin, map[string]any{"name": "x", "scopes": []string{"llm-tasks:write"},
		"limits": map[string]any{"tokens_per_minute": 2100}})
	limits := b.do(t, http.MethodGet, "/v1/api-keys/"+id, admin, nil).data(t)["attributes"].(map[string]any)["limits"]
	require.Equal(t, map[string]any{"tokens_per_minute": 2100.0}, limits)

	// "x" and "y" estimate 1 token, and 1024 of answer: two fit in 2100.
	awayFromMinuteEnd()
	first := b.create(t, "llm-tasks", key, body(t, "llm-tasks"))["id"].(string)
	b.create(t, "llm-tasks", key, body(t, "llm-tasks"))
	r := b.do(t, http.MethodPost, "/v1/llm-tasks", key, body(t, "llm-tasks"))
	msg := requireError(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
	require.Contains(t, msg, "this API key's tokens_per_minute is 2100")
	retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.True(t, retry >= 1 && retry <= 60, "Retry-After %d: until the next minute", retry)
	b.create(t, "llm-tasks", admin, body(t, "llm-tasks")) // a token's jobs are not the key's

	// The first job completes having used 30 tokens: its reservation
	// settles to them, and the minute has room again.
	job, err := b.store.Jobs.GetJob(t.Context(), first)
	require.NoError(t, err)
	finished := time.Now().UTC()
	job.Status, job.Revision, job.CompletedAt, job.Result = jobs.StatusCompleted, job.Revision+1, &finished, `{"content":"ok","finish_reason":"completed"}`
	require.NoError(t, b.store.Jobs.SaveJobUsage(t.Context(), job, &store.UsageEntry{JobID: first, Attempt: 1, Tenant: tenantA,
		APIKey: id, Service: jobs.LLMTasks, Provider: "llm-only", Unit: "token", Quantity: 30, Native: "{}", Currency: "USD", BilledAt: finished}))
	b.create(t, "llm-tasks", key, body(t, "llm-tasks"))

	_, big := issueKey(t, b, admin, map[string]any{"name": "small", "scopes": []string{"llm-tasks:write"},
		"limits": map[string]any{"tokens_per_minute": 1000}})
	msg = requireError(t, b.do(t, http.MethodPost, "/v1/llm-tasks", big, body(t, "llm-tasks")), http.StatusTooManyRequests, "RATE_LIMITED")
	require.Contains(t, msg, "more than a whole minute's")
	requireError(t, b.do(t, http.MethodPost, "/v1/api-keys", admin, newKeyBody(map[string]any{"name": "x", "scopes": []string{"llm-tasks:write"},
		"limits": map[string]any{"tokens_per_minute": 0}})), http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/limits/tokens_per_minute")
}

// TestKeyLimitsHoldForBatches: an inline batch is admitted whole within
// its key's max_in_flight, its items reserve against the key's
// tokens_per_minute one by one, and a key held to either sends no file
// batch.
func TestKeyLimitsHoldForBatches(t *testing.T) {
	t.Parallel()
	var opened *store.Store
	b := setupJobOps(t, sqliteInto(&opened), func(cfg *jobops.Config) {
		cfg.Budgets = &budgets.Reserver{Store: opened.Usage, Prices: providers.NewPriceBook(cfg.Catalog)}
	}, nil)
	admin := b.token(t, "keys:write", "llm-tasks:write")
	_, bounded := issueKey(t, b, admin, map[string]any{"name": "bounded", "scopes": []string{"llm-tasks:write"},
		"limits": map[string]any{"max_in_flight": 2}})
	items := func(n int) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			out[i] = batchItem(t, fmt.Sprintf("item-%d", i), "llm-tasks")
		}
		return out
	}
	r := b.do(t, http.MethodPost, "/v1/batches", bounded, batchBody(items(3)), "Idempotency-Key", "three")
	msg := requireError(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
	require.Contains(t, msg, "the batch's 3 do not fit")
	require.Equal(t, "1", r.Header.Get("Retry-After"))
	b.do(t, http.MethodPost, "/v1/batches", bounded, batchBody(items(2)), "Idempotency-Key", "two").requireStatus(t, http.StatusAccepted)
	requireError(t, b.do(t, http.MethodPost, "/v1/llm-tasks", bounded, body(t, "llm-tasks")), http.StatusTooManyRequests, "RATE_LIMITED")
	requireError(t, b.do(t, http.MethodPost, "/v1/batches", bounded, fileBatchBody("https://files.example/items.jsonl"), "Idempotency-Key", "file"),
		http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/input_file_url")

	// Each item's estimate is about 1,034 tokens: two of three fit 2,100.
	_, metered := issueKey(t, b, admin, map[string]any{"name": "metered", "scopes": []string{"llm-tasks:write"},
		"limits": map[string]any{"tokens_per_minute": 2100}})
	r = b.do(t, http.MethodPost, "/v1/batches", metered, batchBody(items(3)), "Idempotency-Key", "metered")
	r.requireStatus(t, http.StatusAccepted)
	var doc batchDoc
	require.NoError(t, json.Unmarshal(r.Body, &doc))
	require.Len(t, doc.Data.Attributes.Refused, 1, "%s", r.Body)
	require.Equal(t, "RATE_LIMITED", doc.Data.Attributes.Refused[0].Error.Code)
	require.Contains(t, doc.Data.Attributes.Refused[0].Error.Message, "tokens_per_minute is 2100")
	requireError(t, b.do(t, http.MethodPost, "/v1/batches", metered, fileBatchBody("https://files.example/items.jsonl"), "Idempotency-Key", "file"),
		http.StatusUnprocessableEntity, "VALIDATION_ERROR", "/data/attributes/input_file_url")
}
