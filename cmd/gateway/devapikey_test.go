//go:build !nodev

package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/app/apikeys"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// TestDevAPIKey: dev's key is kept in the data dir (mode 0600) and used
// again while it is valid; a new one replaces the dev keys before it.
func TestDevAPIKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.SQLite(t)
	dir := t.TempDir()
	keys := apikeys.New(st.APIKeys, nil, apikeys.TagsOf([]byte("test tags")), nil, nil)
	// check is the key's tenant and scopes, checked by a fresh service.
	check := func(key string) (apikeys.Identity, error) {
		return apikeys.New(st.APIKeys, nil, apikeys.TagsOf([]byte("test tags")), nil, nil).Authenticate(ctx, key)
	}
	requireFile := func(key string) {
		t.Helper()
		info, err := os.Stat(filepath.Join(dir, "dev-api-key"))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
		raw, err := os.ReadFile(filepath.Join(dir, "dev-api-key"))
		require.NoError(t, err)
		require.Equal(t, key+"\n", string(raw))
	}
	refused := func(key, reason string) {
		t.Helper()
		_, err := check(key)
		var invalid *apikeys.InvalidError
		require.True(t, errors.As(err, &invalid), "%v", err)
		require.Equal(t, reason, invalid.Reason)
	}

	first, path, err := devAPIKey(ctx, keys, dir)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "dev-api-key"), path)
	requireFile(first)
	id, err := check(first)
	require.NoError(t, err)
	require.Equal(t, "acme", id.Tenant)
	require.Equal(t, []string{"transcriptions:read", "transcriptions:write", "translations:read", "translations:write",
		"video-analyses:read", "video-analyses:write", "llm-tasks:read", "llm-tasks:write", "usage:read"}, id.Scopes)

	// A user's own key named dev is not dev's.
	_, err = keys.Issue(ctx, apikeys.Creator{Subject: "alice", Tenant: "acme", Scopes: []string{"llm-tasks:read"}},
		apikeys.NewKey{Name: "dev", Scopes: []string{"llm-tasks:read"}})
	require.NoError(t, err)

	again, _, err := devAPIKey(ctx, keys, dir)
	require.NoError(t, err)
	require.Equal(t, first, again, "the valid key is used again")
	listed, err := keys.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, listed, 2)

	// The file gone, a new key, and the one before revoked.
	require.NoError(t, os.Remove(path))
	second, _, err := devAPIKey(ctx, keys, dir)
	require.NoError(t, err)
	require.NotEqual(t, first, second)
	requireFile(second)
	_, err = check(second)
	require.NoError(t, err)
	refused(first, "the API key was revoked")

	// A file that holds no valid key, readable by others: replaced, 0600.
	require.NoError(t, os.WriteFile(path, []byte("gwk_nonsense\n"), 0o644))
	require.NoError(t, os.Chmod(path, 0o644))
	third, _, err := devAPIKey(ctx, keys, dir)
	require.NoError(t, err)
	requireFile(third)
	refused(second, "the API key was revoked")

	listed, err = keys.List(ctx, "acme")
	require.NoError(t, err)
	var names, creators []string
	for _, k := range listed {
		names, creators = append(names, k.Name), append(creators, k.CreatedBy)
	}
	require.Equal(t, []string{"dev", "dev"}, names, "dev's newest and alice's: no pile of dev keys")
	require.ElementsMatch(t, []string{"gateway-dev", "alice"}, creators)
}

// TestDevPrintsAPIKey: gateway dev prints the key it keeps in its data
// dir, and the key runs a job as the README's walkthrough does.
func TestDevPrintsAPIKey(t *testing.T) {
	t.Parallel()
	g := newGateway(t, "")
	raw, err := os.ReadFile(filepath.Join(g.dataDir, "dev-api-key"))
	require.NoError(t, err)
	key := strings.TrimSpace(string(raw))
	require.True(t, strings.HasPrefix(key, apikeys.Prefix), key)

	g.token = key
	status, body, _ := g.do(http.MethodPost, "/v1/translations",
		`{"data":{"type":"translation-job","attributes":{"input":{"type":"text","content":"Hello world","target_language":"de"}}}}`)
	require.Equal(t, http.StatusAccepted, status, "%s", body)
	var doc jobDoc
	require.NoError(t, json.Unmarshal(body, &doc))
	g.waitEnded("translations", doc.Data.ID, time.Minute, "completed")

	g.stop()
	require.Contains(t, g.logs.String(), "API key for tenant acme (every job scope and usage:read; also in "+
		filepath.Join(g.dataDir, "dev-api-key")+"): "+key+"\n")
}
