package devidp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/gin-gonic/gin"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	os.Exit(m.Run())
}

const testIssuer = "http://127.0.0.1:8080/dev/oidc"

type mintedClaims struct {
	jwt.Claims
	Tenant *string  `json:"tenant_id"`
	Scope  *string  `json:"scope"`
	Roles  []string `json:"roles"`
}

// parse verifies token with the issuer's published key and returns its claims.
func parse(t *testing.T, iss *devidp.Issuer, token string) (mintedClaims, jose.Header) {
	t.Helper()
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	keys := iss.PublicKeys()
	var cl mintedClaims
	require.NoError(t, tok.Claims(&keys, &cl))
	return cl, tok.Headers[0]
}

func TestOpenCreatesKeyAndIssuerFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	iss, err := devidp.Open(dir, testIssuer)
	require.NoError(t, err)
	require.Equal(t, testIssuer, iss.URL())
	require.NotEmpty(t, iss.KeyID())

	info, err := os.Stat(filepath.Join(dir, "dev-oidc", "signing-key.json"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	info, err = os.Stat(filepath.Join(dir, "dev-oidc"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())

	raw, err := os.ReadFile(filepath.Join(dir, "dev-oidc", "issuer"))
	require.NoError(t, err)
	require.Equal(t, testIssuer+"\n", string(raw))

	entries, err := os.ReadDir(filepath.Join(dir, "dev-oidc"))
	require.NoError(t, err)
	require.Len(t, entries, 2, "no temporary files left behind")
}

func TestKeyOutlivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := devidp.Open(dir, testIssuer)
	require.NoError(t, err)
	token, err := first.Mint(devidp.TokenRequest{Subject: "alice"})
	require.NoError(t, err)

	second, err := devidp.Open(dir, testIssuer)
	require.NoError(t, err)
	require.Equal(t, first.KeyID(), second.KeyID())
	cl, _ := parse(t, second, token)
	require.Equal(t, "alice", cl.Subject)
}

func TestConcurrentFirstOpenAgreesOnOneKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n = 8
	kids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			iss, err := devidp.Open(dir, testIssuer)
			if err == nil {
				kids[i] = iss.KeyID()
			}
		})
	}
	wg.Wait()
	reopened, err := devidp.Open(dir, testIssuer)
	require.NoError(t, err)
	for _, kid := range kids {
		require.Equal(t, reopened.KeyID(), kid)
	}
}

func TestOpenExisting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	_, err := devidp.OpenExisting(dir)
	require.EqualError(t, err, fmt.Sprintf("no dev identity provider in %s: start `gateway dev --data-dir %s` first", dir, dir))

	running, err := devidp.Open(dir, "http://127.0.0.1:9999/dev/oidc")
	require.NoError(t, err)
	iss, err := devidp.OpenExisting(dir)
	require.NoError(t, err)
	require.Equal(t, running.URL(), iss.URL())
	require.Equal(t, running.KeyID(), iss.KeyID())
}

func TestOpenRejectsBadInput(t *testing.T) {
	t.Parallel()
	_, err := devidp.Open(t.TempDir(), "127.0.0.1:8080/dev/oidc")
	require.ErrorContains(t, err, "must be an absolute http(s) URL")

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "dev-oidc"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dev-oidc", "signing-key.json"), []byte("{"), 0o600))
	_, err = devidp.Open(dir, testIssuer)
	require.ErrorContains(t, err, "delete it to create a new one")
}

func TestMintClaims(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	iss, err := devidp.Open(t.TempDir(), testIssuer)
	require.NoError(t, err)
	iss = iss.WithClock(func() time.Time { return now })

	token, err := iss.Mint(devidp.TokenRequest{
		Tenant: "acme", Subject: "alice", Scopes: []string{"jobs:read", "jobs:write", "jobs:read"},
		Roles: []string{"super-admin"}, Audience: "other-api", TTL: 10 * time.Minute,
	})
	require.NoError(t, err)
	cl, hdr := parse(t, iss, token)
	require.Equal(t, iss.KeyID(), hdr.KeyID)
	require.Equal(t, "at+jwt", hdr.ExtraHeaders[jose.HeaderType])
	require.Equal(t, testIssuer, cl.Issuer)
	require.Equal(t, "alice", cl.Subject)
	require.Equal(t, jwt.Audience{"other-api"}, cl.Audience)
	require.Equal(t, now, cl.IssuedAt.Time().UTC())
	require.Equal(t, now, cl.NotBefore.Time().UTC())
	require.Equal(t, now.Add(10*time.Minute), cl.Expiry.Time().UTC())
	require.NotEmpty(t, cl.ID)
	require.Equal(t, "acme", *cl.Tenant)
	require.Equal(t, "jobs:read jobs:write", *cl.Scope)
	require.Equal(t, []string{"super-admin"}, cl.Roles)

	// Defaults; empty tenant and roles are omitted.
	token, err = iss.Mint(devidp.TokenRequest{Subject: "bob"})
	require.NoError(t, err)
	cl, _ = parse(t, iss, token)
	require.Equal(t, jwt.Audience{devidp.DefaultAudience}, cl.Audience)
	require.Equal(t, now.Add(devidp.DefaultTTL), cl.Expiry.Time().UTC())
	require.Nil(t, cl.Tenant)
	require.Nil(t, cl.Roles)

	token, err = iss.WithAudience("custom").Mint(devidp.TokenRequest{Subject: "bob"})
	require.NoError(t, err)
	cl, _ = parse(t, iss, token)
	require.Equal(t, jwt.Audience{"custom"}, cl.Audience)
}

func TestMintRejectsBadRequests(t *testing.T) {
	t.Parallel()
	iss, err := devidp.Open(t.TempDir(), testIssuer)
	require.NoError(t, err)
	for name, req := range map[string]devidp.TokenRequest{
		"no subject":      {},
		"negative TTL":    {Subject: "a", TTL: -time.Second},
		"scope w/ space":  {Subject: "a", Scopes: []string{"a b"}},
		"empty role":      {Subject: "a", Roles: []string{""}},
		"scope w/ quotes": {Subject: "a", Scopes: []string{`a"b`}},
	} {
		_, err := iss.Mint(req)
		require.Error(t, err, name)
	}
}

type idpBundle struct {
	issuer *devidp.Issuer
	server *httptest.Server
}

func setupServer(t *testing.T) idpBundle {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	iss, err := devidp.Open(t.TempDir(), "http://"+srv.Listener.Addr().String()+devidp.Path)
	require.NoError(t, err)
	r := gin.New()
	iss.Routes(r)
	srv.Config.Handler = r
	srv.Start()
	t.Cleanup(srv.Close)
	return idpBundle{issuer: iss, server: srv}
}

func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

func TestDiscoveryAndJWKS(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	url := b.issuer.URL()

	doc := getJSON(t, url+"/.well-known/openid-configuration")
	require.Equal(t, url, doc["issuer"])
	require.Equal(t, url+"/jwks", doc["jwks_uri"])
	require.Equal(t, url+"/token", doc["token_endpoint"])
	require.Equal(t, []any{"client_credentials", "authorization_code"}, doc["grant_types_supported"])
	require.Equal(t, url+"/authorize", doc["authorization_endpoint"])
	require.Equal(t, []any{"S256"}, doc["code_challenge_methods_supported"])
	require.Equal(t, []any{"RS256"}, doc["id_token_signing_alg_values_supported"])
	require.NotEmpty(t, doc["response_types_supported"])
	require.NotEmpty(t, doc["subject_types_supported"])

	jwks := getJSON(t, url+"/jwks")
	keys := jwks["keys"].([]any)
	require.Len(t, keys, 1)
	key := keys[0].(map[string]any)
	require.Equal(t, b.issuer.KeyID(), key["kid"])
	require.Equal(t, "RSA", key["kty"])
	require.Equal(t, "RS256", key["alg"])
	require.Equal(t, "sig", key["use"])
	for _, private := range []string{"d", "p", "q", "dp", "dq", "qi"} {
		require.NotContains(t, key, private)
	}
}

type tokenReply struct {
	status int
	header http.Header
	body   map[string]any
}

func postToken(t *testing.T, b idpBundle, form url.Values, basicUser string) tokenReply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.issuer.URL()+"/token", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basicUser != "" {
		req.SetBasicAuth(url.QueryEscape(basicUser), "ignored-secret")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return tokenReply{status: resp.StatusCode, header: resp.Header, body: body}
}

func TestTokenEndpoint(t *testing.T) {
	t.Parallel()
	b := setupServer(t)

	t.Run("client_credentials", func(t *testing.T) {
		t.Parallel()
		r := postToken(t, b, url.Values{
			"grant_type": {"client_credentials"}, "client_id": {"ci-bot"}, "client_secret": {"whatever"},
			"scope": {"llm-tasks:write  llm-tasks:read"}, "tenant_id": {"acme"}, "roles": {"super-admin"},
		}, "")
		require.Equal(t, http.StatusOK, r.status)
		require.Equal(t, "no-store", r.header.Get("Cache-Control"))
		require.Equal(t, "Bearer", r.body["token_type"])
		require.EqualValues(t, devidp.DefaultTTL.Seconds(), r.body["expires_in"])
		require.Equal(t, "llm-tasks:write llm-tasks:read", r.body["scope"])
		cl, _ := parse(t, b.issuer, r.body["access_token"].(string))
		require.Equal(t, "ci-bot", cl.Subject)
		require.Equal(t, "acme", *cl.Tenant)
		require.Equal(t, []string{"super-admin"}, cl.Roles)
		require.Equal(t, jwt.Audience{devidp.DefaultAudience}, cl.Audience)
	})
	t.Run("basic client authentication", func(t *testing.T) {
		t.Parallel()
		r := postToken(t, b, url.Values{"grant_type": {"client_credentials"}}, "svc:a b")
		require.Equal(t, http.StatusOK, r.status)
		cl, _ := parse(t, b.issuer, r.body["access_token"].(string))
		require.Equal(t, "svc:a b", cl.Subject)
	})
	t.Run("basic and body client_id disagree", func(t *testing.T) {
		t.Parallel()
		r := postToken(t, b, url.Values{"grant_type": {"client_credentials"}, "client_id": {"x"}}, "y")
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Equal(t, "invalid_request", r.body["error"])
	})
	t.Run("wrong grant type", func(t *testing.T) {
		t.Parallel()
		r := postToken(t, b, url.Values{"grant_type": {"password"}, "client_id": {"x"}}, "")
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Equal(t, "unsupported_grant_type", r.body["error"])
	})
	t.Run("missing grant type", func(t *testing.T) {
		t.Parallel()
		r := postToken(t, b, url.Values{"client_id": {"x"}}, "")
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Equal(t, "invalid_request", r.body["error"])
	})
	t.Run("no client", func(t *testing.T) {
		t.Parallel()
		r := postToken(t, b, url.Values{"grant_type": {"client_credentials"}}, "")
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Equal(t, "invalid_client", r.body["error"])
		require.NotEmpty(t, r.header.Get("WWW-Authenticate"))
	})
}
