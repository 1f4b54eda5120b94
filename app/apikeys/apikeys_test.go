package apikeys_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/app/apikeys"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// clock is a clock the tests move.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// counting counts the reads of keys by id.
type counting struct {
	*store.APIKeyStore
	reads atomic.Int64
}

func (c *counting) APIKey(ctx context.Context, id string) (*store.APIKey, error) {
	c.reads.Add(1)
	return c.APIKeyStore.APIKey(ctx, id)
}

func setup(t *testing.T) (*apikeys.Service, *counting, *clock) {
	st := &counting{APIKeyStore: storetest.SQLite(t).APIKeys}
	c := &clock{now: time.Now()}
	return apikeys.New(st, nil, testTags, c.Now, nil), st, c
}

// testTags tag the keys of the tests' deployment.
var testTags = apikeys.TagsOf([]byte("test tags"))

var alice = apikeys.Creator{Subject: "alice", Tenant: "acme", Scopes: []string{"llm-tasks:write", "llm-tasks:read", "keys:write", "admin:cross-tenant"}}

func invalid(t *testing.T, err error) string {
	t.Helper()
	var e *apikeys.InvalidError
	require.True(t, errors.As(err, &e), "an InvalidError, not %v", err)
	return e.Reason
}

func TestIssuedKeyAuthenticatesAsItsTenant(t *testing.T) {
	t.Parallel()
	s, st, _ := setup(t)
	ctx := context.Background()
	issued, err := s.Issue(ctx, alice, apikeys.NewKey{Name: "ci", Scopes: []string{"llm-tasks:write"}})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(issued.Secret, "gwk_"+issued.Key.ID+"_"))
	secretPart := issued.Secret[len("gwk_"+issued.Key.ID+"_"):]
	hash := sha256.Sum256([]byte(secretPart))
	require.Equal(t, hash[:], issued.Key.SecretHash, "only the secret's hash is kept")
	require.Equal(t, "alice", issued.Key.CreatedBy)

	id, err := s.Authenticate(ctx, issued.Secret)
	require.NoError(t, err)
	require.Equal(t, apikeys.Identity{KeyID: issued.Key.ID, Tenant: "acme", Scopes: []string{"llm-tasks:write"}}, id)
	require.Equal(t, "key:"+issued.Key.ID, id.Subject())
	_, err = s.Authenticate(ctx, issued.Secret)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.reads.Load(), "a key checked is not read again at once")

	wrong := issued.Secret[:len(issued.Secret)-1] + map[bool]string{true: "b", false: "a"}[strings.HasSuffix(issued.Secret, "a")]
	_, err = s.Authenticate(ctx, wrong)
	require.Equal(t, "the API key is not valid", invalid(t, err))
}

func TestMalformedKeysCostNoRead(t *testing.T) {
	t.Parallel()
	s, st, _ := setup(t)
	for _, raw := range []string{"gwk_", "gwk_short_key", "gwk_" + strings.Repeat("A", 16) + "_" + strings.Repeat("a", 52),
		"gwk_" + strings.Repeat("a", 16) + "-" + strings.Repeat("a", 52), "gwk_" + strings.Repeat("a", 16) + "_" + strings.Repeat("1", 52)} {
		_, err := s.Authenticate(context.Background(), raw)
		require.Equal(t, "the API key is malformed", invalid(t, err), raw)
	}
	require.Zero(t, st.reads.Load())
	for i := range 1000 {
		_, err := s.Authenticate(context.Background(), "gwk_"+strings.Repeat(string(rune('a'+i%26)), 16)+"_"+strings.Repeat("a", 52))
		require.Equal(t, "the API key is not valid", invalid(t, err))
	}
	require.Zero(t, st.reads.Load(), "a made-up key's secret lacks its id's tag: it costs no read")

	// A key of another deployment (another tag key) is made up here too.
	issued, err := apikeys.New(st, nil, apikeys.TagsOf([]byte("other deployment")), nil, nil).Issue(context.Background(), alice,
		apikeys.NewKey{Name: "x", Scopes: []string{"llm-tasks:read"}})
	require.NoError(t, err)
	reads := st.reads.Load()
	_, err = s.Authenticate(context.Background(), issued.Secret)
	require.Equal(t, "the API key is not valid", invalid(t, err))
	require.Equal(t, reads, st.reads.Load())
}

func TestScopesAndTenantOfANewKey(t *testing.T) {
	t.Parallel()
	s, _, _ := setup(t)
	ctx := context.Background()
	_, err := s.Issue(ctx, alice, apikeys.NewKey{Name: "x", Scopes: []string{"llm-tasks:write", "video-analyses:read"}})
	var scope *apikeys.ScopeError
	require.ErrorAs(t, err, &scope)
	require.Equal(t, "video-analyses:read", scope.Scope)
	_, err = s.Issue(ctx, alice, apikeys.NewKey{Name: "x", Scopes: []string{"llm-tasks:write"}, Tenant: "globex"})
	require.ErrorIs(t, err, apikeys.ErrOtherTenant)

	root := apikeys.Creator{Subject: "root", Tenant: "ops", Scopes: []string{"keys:write", "llm-tasks:write"}, SuperAdmin: true}
	issued, err := s.Issue(ctx, root, apikeys.NewKey{Name: "x", Scopes: []string{"llm-tasks:write"}, Tenant: "globex"})
	require.NoError(t, err)
	require.Equal(t, "globex", issued.Key.Tenant, "a super-admin may name another tenant")

	// Keys administer no keys and reach no other tenant, whoever makes them.
	for _, reservedScope := range []string{"keys:write", "admin:cross-tenant"} {
		_, err = s.Issue(ctx, alice, apikeys.NewKey{Name: "x", Scopes: []string{"llm-tasks:write", reservedScope}})
		var reserved *apikeys.ReservedScopeError
		require.ErrorAs(t, err, &reserved, reservedScope)
		require.Equal(t, reservedScope, reserved.Scope)
	}

	// Rotating hands over the key's whole power: only to a holder of its scopes.
	broad, err := s.Issue(ctx, alice, apikeys.NewKey{Name: "broad", Scopes: []string{"llm-tasks:write", "llm-tasks:read"}})
	require.NoError(t, err)
	narrow := apikeys.Creator{Subject: "bob", Tenant: "acme", Scopes: []string{"keys:write", "llm-tasks:read"}}
	_, err = s.Rotate(ctx, narrow, "acme", broad.Key.ID, 0)
	require.ErrorAs(t, err, &scope)
	require.Equal(t, "llm-tasks:write", scope.Scope)
	_, err = s.Authenticate(ctx, broad.Secret)
	require.NoError(t, err, "a refused rotation changes nothing")
	_, err = s.Rotate(ctx, root, "acme", broad.Key.ID, 0)
	require.NoError(t, err, "a super-admin may rotate any key")
	_, err = s.Authenticate(ctx, broad.Secret)
	require.Equal(t, "the API key is not valid", invalid(t, err), "rotated without grace: refused at once in this process")
}

func TestRevokedExpiredAndRotatedKeys(t *testing.T) {
	t.Parallel()
	s, st, c := setup(t)
	ctx := context.Background()
	expires := c.Now().Add(time.Hour)
	issued, err := s.Issue(ctx, alice, apikeys.NewKey{Name: "x", Scopes: []string{"llm-tasks:write"}, ExpiresAt: &expires})
	require.NoError(t, err)
	old := issued.Secret

	rotated, err := s.Rotate(ctx, alice, "acme", issued.Key.ID, 10*time.Minute)
	require.NoError(t, err)
	_, err = s.Authenticate(ctx, rotated.Secret)
	require.NoError(t, err)
	_, err = s.Authenticate(ctx, old)
	require.NoError(t, err, "the previous secret works during the grace period")
	c.Add(11 * time.Minute)
	_, err = s.Authenticate(ctx, old)
	require.Equal(t, "the API key is not valid", invalid(t, err), "and not after it")
	_, err = s.Rotate(ctx, alice, "acme", issued.Key.ID, apikeys.MaxGrace+time.Second)
	require.Error(t, err)

	c.Add(time.Hour)
	_, err = s.Authenticate(ctx, rotated.Secret)
	require.Equal(t, "the API key has expired", invalid(t, err))

	other, err := s.Issue(ctx, alice, apikeys.NewKey{Name: "y", Scopes: []string{"llm-tasks:write"}})
	require.NoError(t, err)
	_, err = s.Authenticate(ctx, other.Secret)
	require.NoError(t, err)
	require.ErrorIs(t, s.Revoke(ctx, "globex", other.Key.ID), store.ErrNotFound, "another tenant's key")
	require.NoError(t, s.Revoke(ctx, "acme", other.Key.ID))
	_, err = s.Authenticate(ctx, other.Secret)
	require.Equal(t, "the API key was revoked", invalid(t, err), "refused at once in the process that revoked it")
	wrong := other.Secret[:len(other.Secret)-2] + "22"
	if wrong == other.Secret {
		wrong = other.Secret[:len(other.Secret)-2] + "33"
	}
	_, err = s.Authenticate(ctx, wrong)
	require.Equal(t, "the API key is not valid", invalid(t, err), "a wrong secret says nothing of the key")

	// Another process trusts a key it checked for half a second at most.
	elsewhere := apikeys.New(st, nil, testTags, c.Now, nil)
	third, err := s.Issue(ctx, alice, apikeys.NewKey{Name: "z", Scopes: []string{"llm-tasks:write"}})
	require.NoError(t, err)
	_, err = elsewhere.Authenticate(ctx, third.Secret)
	require.NoError(t, err)
	require.NoError(t, s.Revoke(ctx, "acme", third.Key.ID))
	_, err = elsewhere.Authenticate(ctx, third.Secret)
	require.NoError(t, err, "checked less than half a second ago")
	c.Add(600 * time.Millisecond)
	_, err = elsewhere.Authenticate(ctx, third.Secret)
	require.Equal(t, "the API key was revoked", invalid(t, err))
}

func TestLastUseIsRecordedOnceAMinute(t *testing.T) {
	t.Parallel()
	s, st, c := setup(t)
	ctx := context.Background()
	issued, err := s.Issue(ctx, alice, apikeys.NewKey{Name: "x", Scopes: []string{"llm-tasks:write"}})
	require.NoError(t, err)
	_, err = s.Authenticate(ctx, issued.Secret)
	require.NoError(t, err)
	first, err := st.APIKeyStore.APIKey(ctx, issued.Key.ID)
	require.NoError(t, err)
	require.NotNil(t, first.LastUsedAt)
	c.Add(30 * time.Second)
	_, err = s.Authenticate(ctx, issued.Secret)
	require.NoError(t, err)
	again, err := st.APIKeyStore.APIKey(ctx, issued.Key.ID)
	require.NoError(t, err)
	require.True(t, first.LastUsedAt.Equal(*again.LastUsedAt))
	c.Add(time.Minute)
	_, err = s.Authenticate(ctx, issued.Secret)
	require.NoError(t, err)
	later, err := st.APIKeyStore.APIKey(ctx, issued.Key.ID)
	require.NoError(t, err)
	require.True(t, later.LastUsedAt.After(*first.LastUsedAt))
}

func TestRequestsPerMinuteAreCountedAcrossProcesses(t *testing.T) {
	t.Parallel()
	st := storetest.SQLite(t)
	c := &clock{now: time.Date(2026, 12, 6, 10, 0, 5, 0, time.UTC)}
	// Two services over one store: two API processes.
	one := apikeys.New(st.APIKeys, st.Routing, testTags, c.Now, nil)
	two := apikeys.New(st.APIKeys, st.Routing, testTags, c.Now, nil)
	ctx := context.Background()
	issued, err := one.Issue(ctx, alice, apikeys.NewKey{Name: "x", Scopes: []string{"llm-tasks:write"},
		Limits: store.KeyLimits{RequestsPerMinute: 3}})
	require.NoError(t, err)
	for _, s := range []*apikeys.Service{one, two, one} {
		_, err := s.Authenticate(ctx, issued.Secret)
		require.NoError(t, err)
	}
	_, err = two.Authenticate(ctx, issued.Secret)
	var limited *apikeys.LimitError
	require.ErrorAs(t, err, &limited)
	require.Equal(t, "requests_per_minute", limited.Limit)
	require.Equal(t, 3, limited.Max)
	require.Equal(t, 55*time.Second, limited.RetryAfter, "until the next minute")
	require.Contains(t, limited.Error(), "requests_per_minute is 3")

	c.Add(55 * time.Second)
	_, err = two.Authenticate(ctx, issued.Secret)
	require.NoError(t, err, "a new minute")
}
