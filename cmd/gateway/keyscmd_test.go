package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/app/apikeys"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// keysStore is a migrated store as `gateway keys` reaches it: where are the
// flags that name it.
type keysStore struct {
	st    *store.Store
	where []string
}

// keysStores are a dev data dir's SQLite file and a PostgreSQL schema.
func keysStores(t *testing.T) map[string]func(t *testing.T) keysStore {
	return map[string]func(t *testing.T) keysStore{
		"sqlite": func(t *testing.T) keysStore {
			dir := t.TempDir()
			return keysStore{st: storetest.Open(t, "sqlite:"+filepath.Join(dir, "gateway.db")), where: []string{"--data-dir", dir}}
		},
		"postgres": func(t *testing.T) keysStore {
			url := storetest.FreshPostgresURL(t)
			return keysStore{st: storetest.Open(t, url), where: []string{"--database-url", url}}
		},
	}
}

func (s keysStore) run(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(append(append([]string{"keys"}, args...), s.where...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// authenticate checks key as a serve process that never saw it would.
func (s keysStore) authenticate(key string) (apikeys.Identity, error) {
	keys, err := keyService(context.Background(), config{}, s.st)
	if err != nil {
		return apikeys.Identity{}, err
	}
	return keys.Authenticate(context.Background(), key)
}

// refusal is why key is refused; it fails the test when key is accepted.
func (s keysStore) refusal(t *testing.T, key string) string {
	t.Helper()
	_, err := s.authenticate(key)
	var invalid *apikeys.InvalidError
	require.True(t, errors.As(err, &invalid), "the key is refused: %v", err)
	return invalid.Reason
}

func TestKeysCommand(t *testing.T) {
	t.Parallel()
	for name, open := range keysStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)

			// create, -o text: the secret alone on stdout.
			code, stdout, stderr := s.run("create", "--tenant", "acme", "--name", "ci pipeline", "--scope", "llm-tasks:write,llm-tasks:read",
				"--scope", "usage:read", "--application", "billing", "--expires-in", "24h", "--requests-per-minute", "5", "--max-in-flight", "3", "--tokens-per-minute", "20000")
			require.Equal(t, 0, code, stderr)
			ci := strings.TrimSuffix(stdout, "\n")
			require.NotContains(t, ci, "\n", "one line")
			require.True(t, strings.HasPrefix(ci, apikeys.Prefix), stdout)
			ciID := strings.Split(ci, "_")[1]
			require.Contains(t, stderr, "Created API key "+ciID+` "ci pipeline" of tenant acme`)
			id, err := s.authenticate(ci)
			require.NoError(t, err)
			require.Equal(t, "acme", id.Tenant)
			require.Equal(t, []string{"llm-tasks:write", "llm-tasks:read", "usage:read"}, id.Scopes)
			require.Equal(t, "billing", *id.Application)
			require.Equal(t, 5, id.Limits.RequestsPerMinute)
			require.Equal(t, 3, id.Limits.MaxInFlight)
			require.Equal(t, 20000, id.Limits.TokensPerMinute)
			acme := "acme"
			created, err := s.st.Audit.AuditEvents(context.Background(), store.AuditQuery{Tenant: &acme, Target: "api-key/" + ciID, Limit: 10})
			require.NoError(t, err)
			require.Len(t, created, 1, "the key's creation is in the audit log")
			require.True(t, strings.HasPrefix(created[0].Actor, "cli:"), "by the operator: %s", created[0].Actor)

			// create, -o json: the secret as "secret", beside what the key is.
			code, stdout, stderr = s.run("create", "--tenant", "acme", "--name", "cron", "--scope", "translations:write", "-o", "json")
			require.Equal(t, 0, code, stderr)
			var cron keyJSON
			require.NoError(t, json.Unmarshal([]byte(stdout), &cron), stdout)
			require.True(t, strings.HasPrefix(cron.Secret, apikeys.Prefix+cron.ID+"_"))
			require.Equal(t, []string{"translations:write"}, cron.Scopes)
			require.True(t, strings.HasPrefix(cron.CreatedBy, "cli:"), cron.CreatedBy)
			require.Nil(t, cron.ExpiresAt)
			id, err = s.authenticate(cron.Secret)
			require.NoError(t, err)
			require.Equal(t, cron.ID, id.KeyID)

			// list never shows a secret.
			code, stdout, stderr = s.run("list", "--tenant", "acme")
			require.Equal(t, 0, code, stderr)
			require.Contains(t, stdout, ciID)
			require.Contains(t, stdout, cron.ID)
			for _, key := range []string{ci, cron.Secret} {
				require.NotContains(t, stdout, key[len(key)-52:])
			}
			code, stdout, stderr = s.run("list", "--tenant", "acme", "-o", "json")
			require.Equal(t, 0, code, stderr)
			require.NotContains(t, stdout, `"secret"`)
			var listed []keyJSON
			require.NoError(t, json.Unmarshal([]byte(stdout), &listed), stdout)
			require.Len(t, listed, 2)
			require.Equal(t, cron.ID, listed[0].ID, "newest first")
			require.Equal(t, ciID, listed[1].ID)
			require.NotNil(t, listed[1].LastUsedAt, "authenticated above")
			require.NotNil(t, listed[1].ExpiresAt)
			require.WithinDuration(t, time.Now().Add(24*time.Hour), *listed[1].ExpiresAt, time.Minute)
			require.Equal(t, "billing", *listed[1].Application)
			code, stdout, _ = s.run("list", "--tenant", "globex", "-o", "json")
			require.Equal(t, 0, code)
			require.JSONEq(t, `[]`, stdout, "another tenant's keys")

			// rotate with a grace: the new secret works, and the old one too.
			code, stdout, stderr = s.run("rotate", "--tenant", "acme", "--grace", "1h", ciID)
			require.Equal(t, 0, code, stderr)
			rotated := strings.TrimSuffix(stdout, "\n")
			require.True(t, strings.HasPrefix(rotated, apikeys.Prefix+ciID+"_"))
			require.NotEqual(t, ci, rotated)
			require.Contains(t, stderr, "The previous secret works until")
			_, err = s.authenticate(rotated)
			require.NoError(t, err)
			_, err = s.authenticate(ci)
			require.NoError(t, err, "within its grace")

			// rotate without: the old one is refused.
			code, stdout, stderr = s.run("rotate", "--tenant", "acme", cron.ID, "-o", "json")
			require.Equal(t, 0, code, stderr)
			var cronRotated keyJSON
			require.NoError(t, json.Unmarshal([]byte(stdout), &cronRotated), stdout)
			require.Nil(t, cronRotated.PreviousSecretExpiresAt)
			_, err = s.authenticate(cronRotated.Secret)
			require.NoError(t, err)
			require.Equal(t, "the API key is not valid", s.refusal(t, cron.Secret))

			// revoke: refused, no longer listed; another tenant cannot.
			code, _, stderr = s.run("revoke", "--tenant", "globex", ciID)
			require.Equal(t, 1, code)
			require.Contains(t, stderr, `tenant globex has no API key "`+ciID+`"`)
			_, err = s.authenticate(rotated)
			require.NoError(t, err)
			code, stdout, stderr = s.run("revoke", "--tenant", "acme", ciID)
			require.Equal(t, 0, code, stderr)
			require.Contains(t, stdout, "Revoked API key "+ciID)
			require.Equal(t, "the API key was revoked", s.refusal(t, rotated))
			require.Equal(t, "the API key was revoked", s.refusal(t, ci))
			code, stdout, _ = s.run("list", "--tenant", "acme")
			require.Equal(t, 0, code)
			require.NotContains(t, stdout, ciID)
			code, _, stderr = s.run("revoke", "--tenant", "acme", ciID)
			require.Equal(t, 1, code, "revoked already")
			require.Contains(t, stderr, "(or it was revoked)")
			code, _, _ = s.run("rotate", "--tenant", "acme", ciID)
			require.Equal(t, 1, code, "a revoked key is not rotated")
		})
	}
}

// TestKeysCommandRefuses: usage mistakes exit 2 naming their flag, and
// the scopes keys never hold exit 1, creating nothing.
func TestKeysCommandRefuses(t *testing.T) {
	t.Parallel()
	s := keysStores(t)["sqlite"](t)
	create := []string{"create", "--tenant", "acme", "--name", "ci", "--scope", "llm-tasks:write"}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"create", "--name", "ci", "--scope", "llm-tasks:write"}, "--tenant is required"},
		{[]string{"list", "--tenant", "Acme"}, `--tenant "Acme"`},
		{[]string{"create", "--tenant", "acme", "--scope", "llm-tasks:write"}, "--name is required"},
		{[]string{"create", "--tenant", "acme", "--name", "ci"}, "--scope is required"},
		{[]string{"create", "--tenant", "acme", "--name", "ci", "--scope", ","}, "--scope is required"},
		{[]string{"create", "--tenant", "acme", "--name", "ci", "--scope", "a:read,a:read"}, `--scope "a:read" is given twice`},
		{[]string{"create", "--tenant", "acme", "--name", strings.Repeat("n", 201), "--scope", "a:read"}, "--name: must be at most 200"},
		{append(create, "--application", "Billing"), `--application "Billing"`},
		{append(create, "--expires-in", "1h", "--expires-at", "2099-01-01"), "give --expires-in or --expires-at, not both"},
		{append(create, "--expires-in", "-1h"), "--expires-in -1h0m0s"},
		{append(create, "--expires-at", "2020-01-01"), "--expires-at 2020-01-01: must be in the future"},
		{append(create, "--expires-at", "soon"), `--expires-at "soon"`},
		{append(create, "--requests-per-minute", "-1"), "--requests-per-minute -1"},
		{append(create, "--requests-per-minute", "1000001"), "--requests-per-minute 1000001"},
		{append(create, "--max-in-flight", "-1"), "--max-in-flight -1"},
		{append(create, "--tokens-per-minute", "-5"), "--tokens-per-minute -5"},
		{append(create, "-o", "yaml"), `-o "yaml"`},
		{append(create, "extra"), `unexpected argument "extra"`},
		{[]string{"rotate", "--tenant", "acme", "--grace", "25h", "abc"}, "--grace 25h0m0s: use a duration from 0 to 24h"},
		{[]string{"rotate", "--tenant", "acme", "--grace", "-1s", "abc"}, "--grace -1s"},
		{[]string{"revoke", "--tenant", "acme"}, "give one key id"},
		{[]string{"revoke", "--tenant", "acme", "a", "b"}, "give one key id"},
		{[]string{"frob", "--tenant", "acme"}, `unknown command "frob"`},
		{[]string{"list", "--tenant", "acme", "--name", "x"}, "unknown flag: --name"},
	} {
		code, stdout, stderr := s.run(c.args...)
		require.Equal(t, 2, code, "%v: %s", c.args, stderr)
		require.Contains(t, stderr, c.says, c.args)
		require.Empty(t, stdout, c.args)
	}
	var out, errOut bytes.Buffer
	require.Equal(t, 2, run([]string{"keys"}, &out, &errOut))
	require.Contains(t, errOut.String(), "gateway keys create --tenant acme")

	for _, scope := range []string{"keys:write", "admin:cross-tenant", "admin:codec"} {
		code, stdout, stderr := s.run("create", "--tenant", "acme", "--name", "ci", "--scope", "llm-tasks:write,"+scope)
		require.Equal(t, 2, code, stderr)
		require.Contains(t, stderr, `--scope: the scope "`+scope+`" is not for API keys`)
		require.Empty(t, stdout)
	}
	keys, err := s.st.APIKeys.ListAPIKeys(context.Background(), "acme")
	require.NoError(t, err)
	require.Empty(t, keys, "nothing created")
}
