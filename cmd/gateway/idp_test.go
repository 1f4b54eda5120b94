package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api/auth"
)

// TestIdentityProviderOnItsOwn: `gateway idp` issues tokens, by its token
// endpoint and by `gateway token` on its data dir, that the API's verifier
// accepts for the issuer URL it was given.
func TestIdentityProviderOnItsOwn(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the gateway binary")
	}
	dataDir := t.TempDir()
	idp := startProcess(t, nil, "idp", "--data-dir", dataDir)
	issuer := "http://" + idp.listen + "/dev/oidc"
	verifier := auth.NewVerifier(issuer, "ai-job-gateway", nil)

	resp, err := http.PostForm(issuer+"/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {"alice"},
		"client_secret": {"anything"}, "tenant_id": {"acme"}, "scope": {"llm-tasks:write llm-tasks:read"}})
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var answer struct {
		AccessToken string `json:"access_token"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
	caller, err := verifier.Verify(context.Background(), answer.AccessToken)
	require.NoError(t, err)
	require.Equal(t, "acme", caller.Tenant)
	require.Equal(t, "alice", caller.Subject)

	out, err := exec.Command(gatewayBin, "token", "--data-dir", dataDir, "--tenant", "acme", "--scope", "llm-tasks:read").Output()
	require.NoError(t, err)
	_, err = verifier.Verify(context.Background(), strings.TrimSpace(string(out)))
	require.NoError(t, err, "gateway token mints for the running idp")
}
