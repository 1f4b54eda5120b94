//go:build !nodev

package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/app/apikeys"
	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// The key `gateway dev` hands a developer (docs/operations.md, What
// gateway dev runs): of the tenant the walkthrough and `make token` use,
// kept in the data dir so that it lasts across restarts.
const (
	devKeyTenant  = "acme"
	devKeyName    = "dev"
	devKeyCreator = "gateway-dev"
	devKeyFile    = "dev-api-key"
)

// devKeyScopes are every job service's scopes and usage:read: what the
// README's walkthrough needs, and what `make token` gives.
func devKeyScopes() []string {
	var scopes []string
	for _, s := range jobs.Services() {
		scopes = append(scopes, string(s.ID)+":read", string(s.ID)+":write")
	}
	return append(scopes, api.ScopeUsageRead)
}

// devAPIKey is dev's key and the file that holds it: the key the data
// dir's file holds while it is valid with devKeyScopes, else a new one
// written there (mode 0600), the dev keys issued before it revoked so
// that they do not pile up.
func devAPIKey(ctx context.Context, keys *apikeys.Service, dataDir string) (key, path string, err error) {
	path = filepath.Join(dataDir, devKeyFile)
	scopes := devKeyScopes()
	if raw, err := os.ReadFile(path); err == nil {
		key = strings.TrimSpace(string(raw))
		id, err := keys.Authenticate(ctx, key)
		var invalid *apikeys.InvalidError
		switch {
		case err == nil && id.Tenant == devKeyTenant && slices.Equal(id.Scopes, scopes):
			return key, path, nil
		case err != nil && !errors.As(err, &invalid):
			return "", "", err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", "", err
	}
	previous, err := keys.List(ctx, devKeyTenant)
	if err != nil {
		return "", "", err
	}
	for _, k := range previous {
		if k.Name == devKeyName && k.CreatedBy == devKeyCreator {
			if err := keys.Revoke(ctx, devKeyTenant, k.ID); err != nil {
				return "", "", err
			}
		}
	}
	issued, err := keys.Issue(ctx, apikeys.Creator{Subject: devKeyCreator, Tenant: devKeyTenant, Scopes: scopes},
		apikeys.NewKey{Name: devKeyName, Scopes: scopes})
	if err != nil {
		return "", "", err
	}
	// Removed first: WriteFile keeps an existing file's mode.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", "", err
	}
	if err := os.WriteFile(path, []byte(issued.Secret+"\n"), 0o600); err != nil {
		return "", "", err
	}
	return issued.Secret, path, nil
}
