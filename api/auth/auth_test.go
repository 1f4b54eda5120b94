package auth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
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

const audience = "ai-job-gateway"

// bundle is one dev issuer served over HTTP, a verifier for it and an API
// router behind auth.Middleware.
type bundle struct {
	dataDir  string
	issuer   *devidp.Issuer
	server   *httptest.Server
	handler  *atomic.Pointer[http.Handler] // swapped to simulate a restart
	verifier *auth.Verifier
	api      *gin.Engine

	jwksFetches atomic.Int64 // JWKS requests served
	jwksDown    atomic.Bool  // the JWKS endpoint answers 503
	skew        atomic.Int64 // the verifier's clock runs this far ahead
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{dataDir: t.TempDir(), handler: &atomic.Pointer[http.Handler]{}}
	b.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == devidp.Path+"/jwks" {
			b.jwksFetches.Add(1)
			if b.jwksDown.Load() {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
		}
		(*b.handler.Load()).ServeHTTP(w, r)
	}))
	b.issuer = b.openIssuer(t)
	b.server.Start()
	t.Cleanup(b.server.Close)
	b.verifier = auth.NewVerifier(b.issuer.URL(), audience, b.server.Client())
	auth.SetClock(b.verifier, func() time.Time { return time.Now().Add(time.Duration(b.skew.Load())) })
	b.api = newAPI(b.verifier)
	return b
}

// openIssuer opens the issuer from the data dir and serves it.
func (b *bundle) openIssuer(t *testing.T) *devidp.Issuer {
	t.Helper()
	iss, err := devidp.Open(b.dataDir, "http://"+b.server.Listener.Addr().String()+devidp.Path)
	require.NoError(t, err)
	r := gin.New()
	iss.Routes(r)
	var h http.Handler = r
	b.handler.Store(&h)
	return iss
}

func (b *bundle) mint(t *testing.T, req devidp.TokenRequest) string {
	t.Helper()
	token, err := b.issuer.Mint(req)
	require.NoError(t, err)
	return token
}

// signWithDevKey signs arbitrary claims with the dev key on disk, for tokens
// the issuer would never mint.
func (b *bundle) signWithDevKey(t *testing.T, claims map[string]any) string {
	t.Helper()
	return sign(t, b.devKey(t), claims)
}

// devKey is the dev issuer's signing key.
func (b *bundle) devKey(t *testing.T) jose.JSONWebKey {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(b.dataDir, "dev-oidc", "signing-key.json"))
	require.NoError(t, err)
	var key jose.JSONWebKey
	require.NoError(t, json.Unmarshal(raw, &key))
	return key
}

func sign(t *testing.T, key jose.JSONWebKey, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, nil)
	require.NoError(t, err)
	token, err := jwt.Signed(signer).Claims(claims).Serialize()
	require.NoError(t, err)
	return token
}

// validClaims are the claims of a good token, to be varied by tests.
func (b *bundle) validClaims() map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": b.issuer.URL(), "sub": "alice", "aud": audience, "tenant_id": "acme",
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(), "scope": "jobs:read",
	}
}

// renderErrors stands in for the API's error renderer.
func renderErrors(c *gin.Context) {
	c.Next()
	for _, e := range c.Errors {
		var apiErr *apierror.Error
		if errors.As(e.Err, &apiErr) {
			for k, vs := range apiErr.Header {
				for _, v := range vs {
					c.Writer.Header().Add(k, v)
				}
			}
			c.JSON(apiErr.Status, gin.H{"error": gin.H{"code": apiErr.Code, "message": apiErr.Message}})
			return
		}
	}
}

func newAPI(v *auth.Verifier) *gin.Engine {
	r := gin.New()
	r.Use(renderErrors)
	g := r.Group("/v1", auth.Middleware(v, nil))
	g.GET("/whoami", func(c *gin.Context) { c.JSON(http.StatusOK, auth.CallerFrom(c)) })
	g.GET("/scoped", auth.RequireScope("jobs:write"), func(c *gin.Context) { c.Status(http.StatusNoContent) })
	g.GET("/admin", auth.RequireSuperAdmin(), func(c *gin.Context) { c.Status(http.StatusNoContent) })
	g.GET("/effective", func(c *gin.Context) {
		tenant, user, err := auth.EffectiveIdentity(c)
		if err != nil {
			_ = c.Error(err)
			c.Abort()
			return
		}
		c.JSON(http.StatusOK, gin.H{"tenant": tenant, "user": user})
	})
	return r
}

type reply struct {
	status int
	header http.Header
	body   map[string]any
}

func (r reply) errorCode() string {
	e, _ := r.body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func (r reply) errorMessage() string {
	e, _ := r.body["error"].(map[string]any)
	msg, _ := e["message"].(string)
	return msg
}

func (b *bundle) call(t *testing.T, path, authorization string, headers ...string) reply {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	b.api.ServeHTTP(rec, req)
	out := reply{status: rec.Code, header: rec.Header()}
	if rec.Body.Len() > 0 {
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out.body))
	}
	return out
}

func requireUnauthorized(t *testing.T, r reply, message string) {
	t.Helper()
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.Equal(t, apierror.CodeUnauthorized, r.errorCode())
	require.Equal(t, `Bearer error="invalid_token"`, r.header.Get("WWW-Authenticate"))
	require.Contains(t, r.errorMessage(), message)
}

func TestValidTokenYieldsCaller(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.mint(t, devidp.TokenRequest{
		Tenant: "acme", Subject: "alice", Scopes: []string{"jobs:read", "admin:cross-tenant"},
		Roles: []string{"super-admin"}, Audience: audience,
	})

	caller, err := b.verifier.Verify(context.Background(), token)
	require.NoError(t, err)
	require.Equal(t, auth.Caller{
		Subject: "alice", Tenant: "acme",
		Scopes: []string{"jobs:read", "admin:cross-tenant"}, Roles: []string{"super-admin"},
	}, caller)
	require.True(t, caller.HasScope("jobs:read"))
	require.False(t, caller.HasScope("jobs:write"))
	require.True(t, caller.IsSuperAdmin())
	require.True(t, caller.CrossTenant())

	r := b.call(t, "/v1/whoami", "Bearer "+token)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "alice", r.body["Subject"])
	r = b.call(t, "/v1/whoami", "bearer "+token)
	require.Equal(t, http.StatusOK, r.status, "the scheme is case-insensitive")
}

func TestTokenWithoutTenantIsAllowed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	caller, err := b.verifier.Verify(context.Background(), b.mint(t, devidp.TokenRequest{Subject: "root", Roles: []string{"super-admin"}}))
	require.NoError(t, err)
	require.Empty(t, caller.Tenant)
	require.Nil(t, caller.Scopes)
	require.True(t, caller.IsSuperAdmin())
}

func TestClaimForms(t *testing.T) {
	t.Parallel()
	b := setup(t)
	claims := b.validClaims()
	claims["scope"] = " a:read  b:write "
	claims["roles"] = []string{"super-admin", ""}
	caller, err := b.verifier.Verify(context.Background(), b.signWithDevKey(t, claims))
	require.NoError(t, err)
	require.Equal(t, []string{"a:read", "b:write"}, caller.Scopes)
	require.Equal(t, []string{"super-admin"}, caller.Roles)

	for _, tc := range []struct {
		claim   string
		value   any
		message string
	}{
		// A string roles must not make a super-admin.
		{"roles", "super-admin", "roles must be an array of strings"},
		{"roles", []any{"super-admin", 7}, "roles must be an array of strings"},
		{"scope", []string{"a:read", "b:write"}, "scope must be a space-separated string"},
	} {
		claims := b.validClaims()
		claims[tc.claim] = tc.value
		token := b.signWithDevKey(t, claims)
		_, err := b.verifier.Verify(context.Background(), token)
		require.ErrorIs(t, err, auth.ErrClaims, "%s: %v", tc.claim, tc.value)
		requireUnauthorized(t, b.call(t, "/v1/admin", "Bearer "+token), tc.message)
	}
}

// Tenants are slugs, subjects short printable strings: anything else is a
// malformed token.
func TestIdentityClaimsAreBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		name    string
		claims  map[string]any
		message string
	}{
		{"long tenant", map[string]any{"tenant_id": strings.Repeat("a", 5000)}, "tenant_id must be a tenant slug"},
		{"tenant with NUL", map[string]any{"tenant_id": "acme\x00"}, "tenant_id must be a tenant slug"},
		{"tenant in capitals", map[string]any{"tenant_id": "ACME"}, "tenant_id must be a tenant slug"},
		{"tenant of one letter", map[string]any{"tenant_id": "a"}, "tenant_id must be a tenant slug"},
		{"tenant of 64 letters", map[string]any{"tenant_id": strings.Repeat("a", 64)}, "tenant_id must be a tenant slug"},
		{"long sub", map[string]any{"sub": strings.Repeat("a", 256)}, "sub must be at most 255 characters"},
		{"sub with NUL", map[string]any{"sub": "alice\x00"}, "sub must not contain control characters"},
		{"sub with newline", map[string]any{"sub": "alice\nadmin"}, "sub must not contain control characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			claims := b.validClaims()
			for k, v := range tc.claims {
				claims[k] = v
			}
			token := b.signWithDevKey(t, claims)
			_, err := b.verifier.Verify(context.Background(), token)
			require.ErrorIs(t, err, auth.ErrClaims)
			requireUnauthorized(t, b.call(t, "/v1/whoami", "Bearer "+token), tc.message)
		})
	}

	claims := b.validClaims()
	claims["sub"] = strings.Repeat("é", 255)
	claims["tenant_id"] = "a" + strings.Repeat("-b", 31)
	caller, err := b.verifier.Verify(context.Background(), b.signWithDevKey(t, claims))
	require.NoError(t, err, "255 characters of sub and 63 of tenant are fine")
	require.Equal(t, claims["tenant_id"], caller.Tenant)
}

func TestIssuedAtInTheFuture(t *testing.T) {
	t.Parallel()
	b := setup(t)
	claims := b.validClaims()
	claims["iat"] = time.Now().Add(10 * time.Minute).Unix()
	token := b.signWithDevKey(t, claims)
	_, err := b.verifier.Verify(context.Background(), token)
	require.ErrorIs(t, err, auth.ErrNotYetValid)
	requireUnauthorized(t, b.call(t, "/v1/whoami", "Bearer "+token), "iat is in the future")

	claims["iat"] = time.Now().Add(20 * time.Second).Unix() // within the leeway
	_, err = b.verifier.Verify(context.Background(), b.signWithDevKey(t, claims))
	require.NoError(t, err)
}

// TestTokenType: access tokens come as at+jwt (RFC 9068), JWT or without
// typ; another typ is refused, and an ID token, whose audience is the
// client, is refused by the audience rule.
func TestTokenType(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := b.devKey(t)
	signTyped := func(typ string, claims map[string]any) string {
		opts := &jose.SignerOptions{}
		if typ != "" {
			opts = opts.WithType(jose.ContentType(typ))
		}
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, opts)
		require.NoError(t, err)
		token, err := jwt.Signed(signer).Claims(claims).Serialize()
		require.NoError(t, err)
		return token
	}
	for _, typ := range []string{"", "JWT", "at+jwt", "application/at+JWT"} {
		_, err := b.verifier.Verify(context.Background(), signTyped(typ, b.validClaims()))
		require.NoError(t, err, "typ %q", typ)
	}
	for _, typ := range []string{"dpop+jwt", "logout+jwt", "id_token"} {
		token := signTyped(typ, b.validClaims())
		_, err := b.verifier.Verify(context.Background(), token)
		require.ErrorIs(t, err, auth.ErrMalformed, "typ %q", typ)
		requireUnauthorized(t, b.call(t, "/v1/whoami", "Bearer "+token), "not an access token")
	}
	idToken := b.validClaims()
	idToken["aud"], idToken["nonce"], idToken["azp"] = "web-app", "n-0S6_WzA2Mj", "web-app"
	_, err := b.verifier.Verify(context.Background(), signTyped("JWT", idToken))
	require.ErrorIs(t, err, auth.ErrAudience)
}

func TestRejectedTokens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now()

	otherKeyIssuer, err := devidp.Open(t.TempDir(), b.issuer.URL()) // same iss, other key
	require.NoError(t, err)
	otherURLIssuer, err := devidp.Open(b.dataDir, "http://127.0.0.1:1/dev/oidc") // same key, other iss
	require.NoError(t, err)
	impostorKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	forged := b.validClaims()

	withClaims := func(change func(map[string]any)) string {
		claims := b.validClaims()
		change(claims)
		return b.signWithDevKey(t, claims)
	}
	hs256, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
	require.NoError(t, err)
	hsToken, err := jwt.Signed(hs256).Claims(b.validClaims()).Serialize()
	require.NoError(t, err)
	mustMint := func(iss *devidp.Issuer, req devidp.TokenRequest) string {
		token, err := iss.Mint(req)
		require.NoError(t, err)
		return token
	}
	at := func(t time.Time) func() time.Time { return func() time.Time { return t } }

	for _, tc := range []struct {
		name    string
		token   string
		kind    error
		message string
	}{
		{"expired", mustMint(b.issuer.WithClock(at(now.Add(-2*time.Hour))), devidp.TokenRequest{Subject: "a"}), auth.ErrExpired, "expired"},
		{"nbf beyond go-oidc's 5 min leeway", mustMint(b.issuer.WithClock(at(now.Add(10*time.Minute))), devidp.TokenRequest{Subject: "a"}), auth.ErrNotYetValid, "not valid yet"},
		{"nbf within go-oidc's leeway but beyond ours", mustMint(b.issuer.WithClock(at(now.Add(3*time.Minute))), devidp.TokenRequest{Subject: "a"}), auth.ErrNotYetValid, "not valid yet"},
		{"wrong audience", mustMint(b.issuer, devidp.TokenRequest{Subject: "a", Audience: "another-api"}), auth.ErrAudience, `audience does not include "ai-job-gateway"`},
		{"wrong issuer", mustMint(otherURLIssuer, devidp.TokenRequest{Subject: "a"}), auth.ErrIssuer, "not issued by " + b.issuer.URL()},
		{"signed by another key", mustMint(otherKeyIssuer, devidp.TokenRequest{Subject: "a"}), auth.ErrSignature, "signature"},
		{"another key claiming the dev kid", sign(t, jose.JSONWebKey{Key: impostorKey, KeyID: b.issuer.KeyID()}, forged), auth.ErrSignature, "signature"},
		{"HS256", hsToken, auth.ErrMalformed, "supported algorithm"},
		{"not a JWT", "not-a-jwt", auth.ErrMalformed, "supported algorithm"},
		{"no sub", withClaims(func(c map[string]any) { delete(c, "sub") }), auth.ErrClaims, "no subject"},
		{"no exp", withClaims(func(c map[string]any) { delete(c, "exp") }), auth.ErrClaims, "no expiry"},
		{"tenant_id not a string", withClaims(func(c map[string]any) { c["tenant_id"] = 7 }), auth.ErrClaims, "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := b.verifier.Verify(context.Background(), tc.token)
			require.ErrorIs(t, err, tc.kind)
			var te *auth.TokenError
			require.ErrorAs(t, err, &te)
			requireUnauthorized(t, b.call(t, "/v1/whoami", "Bearer "+tc.token), tc.message)
		})
	}
}

// unknownKidTokens are n tokens signed by a key the issuer never published,
// each with a kid of its own; every other one has expired.
func (b *bundle) unknownKidTokens(t *testing.T, n int) []string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tokens := make([]string, n)
	for i := range tokens {
		claims := b.validClaims()
		if i%2 == 1 {
			past := time.Now().Add(-2 * time.Hour)
			claims["iat"], claims["nbf"], claims["exp"] = past.Unix(), past.Unix(), past.Add(time.Hour).Unix()
		}
		tokens[i] = sign(t, jose.JSONWebKey{Key: key, KeyID: fmt.Sprintf("rogue-%d", i)}, claims)
	}
	return tokens
}

func TestUnknownKidsDoNotFloodTheIssuer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tokens := b.unknownKidTokens(t, 50)
	wantKind := func(i int) error {
		if i%2 == 1 {
			return auth.ErrExpired
		}
		return auth.ErrSignature
	}

	// Concurrent misses on a fresh verifier share one fetch at most.
	errs := make([]error, len(tokens))
	var wg sync.WaitGroup
	for i, token := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.verifier.Verify(context.Background(), token)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.ErrorIs(t, err, wantKind(i), "token %d", i)
	}
	require.LessOrEqual(t, b.jwksFetches.Load(), int64(1))

	// The issuer's own tokens verify with the keys fetched once.
	_, err := b.verifier.Verify(context.Background(), b.mint(t, devidp.TokenRequest{Subject: "alice"}))
	require.NoError(t, err)
	require.Equal(t, int64(1), b.jwksFetches.Load())

	// Misses within the refetch window do not fetch again.
	for round := 0; round < 2; round++ {
		for i, token := range tokens {
			_, err := b.verifier.Verify(context.Background(), token)
			require.ErrorIs(t, err, wantKind(i), "token %d", i)
		}
	}
	requireUnauthorized(t, b.call(t, "/v1/whoami", "Bearer "+tokens[0]), "not in the issuer's key set")
	require.Equal(t, int64(1), b.jwksFetches.Load())
}

// TestConcurrentFirstTokensShareTheFirstFetch: requests that arrive while
// a fresh verifier's first fetch runs wait for it and are let in.
func TestConcurrentFirstTokensShareTheFirstFetch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.mint(t, devidp.TokenRequest{Subject: "alice"})
	errs := make([]error, 20)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { _, errs[i] = b.verifier.Verify(context.Background(), token) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "request %d", i)
	}
	require.Equal(t, int64(1), b.jwksFetches.Load())
}

func TestKeyRotationIsPickedUpAfterTheRefetchWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.verifier.Verify(context.Background(), b.mint(t, devidp.TokenRequest{Subject: "alice"}))
	require.NoError(t, err)
	require.Equal(t, int64(1), b.jwksFetches.Load())

	// The issuer rotates to a new key under the same URL.
	rotated, err := devidp.Open(t.TempDir(), b.issuer.URL())
	require.NoError(t, err)
	require.NotEqual(t, b.issuer.KeyID(), rotated.KeyID())
	r := gin.New()
	rotated.Routes(r)
	var h http.Handler = r
	b.handler.Store(&h)
	token, err := rotated.Mint(devidp.TokenRequest{Subject: "alice"})
	require.NoError(t, err)

	// Right after a fetch the new kid is unknown and is not fetched for.
	_, err = b.verifier.Verify(context.Background(), token)
	require.ErrorIs(t, err, auth.ErrSignature)
	require.Equal(t, int64(1), b.jwksFetches.Load())

	// Once the window has passed, the unknown kid refetches the key set.
	b.skew.Store(int64(31 * time.Second))
	caller, err := b.verifier.Verify(context.Background(), token)
	require.NoError(t, err)
	require.Equal(t, "alice", caller.Subject)
	require.Equal(t, int64(2), b.jwksFetches.Load())
}

func TestKeySetUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.verifier.Ready(context.Background()))
	b.jwksDown.Store(true)
	token := "Bearer " + b.mint(t, devidp.TokenRequest{Subject: "alice"})

	// The key set cannot be fetched: the token may be fine, so 503.
	for range 2 {
		r := b.call(t, "/v1/whoami", token)
		require.Equal(t, http.StatusServiceUnavailable, r.status)
		require.Equal(t, apierror.CodeServiceUnavailable, r.errorCode())
		retry, err := strconv.Atoi(r.header.Get("Retry-After"))
		require.NoError(t, err)
		require.Positive(t, retry)
	}
	require.Equal(t, int64(1), b.jwksFetches.Load(), "a failed fetch is not retried within the window")

	// The issuer is back and the window has passed: the key set is fetched,
	// and a kid that is not in it is the token's fault.
	b.jwksDown.Store(false)
	b.skew.Store(int64(31 * time.Second))
	require.Equal(t, http.StatusOK, b.call(t, "/v1/whoami", token).status)
	requireUnauthorized(t, b.call(t, "/v1/whoami", "Bearer "+b.unknownKidTokens(t, 1)[0]), "not in the issuer's key set")
	require.Equal(t, int64(2), b.jwksFetches.Load())
}

func TestNotBeforeWithinLeewayIsAccepted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	soon := time.Now().Add(20 * time.Second)
	token := b.mint(t, devidp.TokenRequest{Subject: "a"})
	token2, err := b.issuer.WithClock(func() time.Time { return soon }).Mint(devidp.TokenRequest{Subject: "a"})
	require.NoError(t, err)
	for _, tok := range []string{token, token2} {
		_, err := b.verifier.Verify(context.Background(), tok)
		require.NoError(t, err)
	}
}

func TestMalformedAuthorizationHeader(t *testing.T) {
	t.Parallel()
	b := setup(t)
	valid := b.mint(t, devidp.TokenRequest{Subject: "a"})
	for header, message := range map[string]string{
		"":                        "missing bearer token",
		"Basic x":                 "Bearer scheme",
		"Bearer":                  "no token",
		"Bearer   ":               "no token",
		"Bearer " + valid + " x":  "single JWT",
		"Token " + valid:          "Bearer scheme",
		"Bearer not.a.jwt-at-all": "supported algorithm",
	} {
		requireUnauthorized(t, b.call(t, "/v1/whoami", header), message)
	}
}

func TestRequireScopeAndSuperAdmin(t *testing.T) {
	t.Parallel()
	b := setup(t)
	plain := "Bearer " + b.mint(t, devidp.TokenRequest{Tenant: "acme", Subject: "a", Scopes: []string{"jobs:read"}})
	writer := "Bearer " + b.mint(t, devidp.TokenRequest{Tenant: "acme", Subject: "a", Scopes: []string{"jobs:write"}})
	admin := "Bearer " + b.mint(t, devidp.TokenRequest{Subject: "root", Roles: []string{"super-admin"}})

	r := b.call(t, "/v1/scoped", plain)
	require.Equal(t, http.StatusForbidden, r.status)
	require.Equal(t, apierror.CodeInsufficientScope, r.errorCode())
	require.Contains(t, r.errorMessage(), "jobs:write")
	require.Equal(t, http.StatusNoContent, b.call(t, "/v1/scoped", writer).status)

	r = b.call(t, "/v1/admin", writer)
	require.Equal(t, http.StatusForbidden, r.status)
	require.Equal(t, apierror.CodeForbidden, r.errorCode())
	require.Equal(t, http.StatusNoContent, b.call(t, "/v1/admin", admin).status)
}

func TestEffectiveIdentity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	regular := "Bearer " + b.mint(t, devidp.TokenRequest{Tenant: "acme", Subject: "alice", Scopes: []string{"jobs:read"}})
	cross := "Bearer " + b.mint(t, devidp.TokenRequest{Tenant: "ops", Subject: "bob", Scopes: []string{"admin:cross-tenant"}})

	for _, tc := range []struct {
		name         string
		token        string
		headers      []string
		tenant, user string
		forbidden    bool
	}{
		{"token identity", regular, nil, "acme", "alice", false},
		{"empty headers are absent", regular, []string{auth.HeaderEffectiveTenant, " ", auth.HeaderEffectiveUser, ""}, "acme", "alice", false},
		{"tenant header without scope", regular, []string{auth.HeaderEffectiveTenant, "globex"}, "", "", true},
		{"user header without scope", regular, []string{auth.HeaderEffectiveUser, "mallory"}, "", "", true},
		{"cross-tenant tenant only", cross, []string{auth.HeaderEffectiveTenant, "globex"}, "globex", "bob", false},
		{"cross-tenant both", cross, []string{auth.HeaderEffectiveTenant, "globex", auth.HeaderEffectiveUser, "carol"}, "globex", "carol", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := b.call(t, "/v1/effective", tc.token, tc.headers...)
			if tc.forbidden {
				require.Equal(t, http.StatusForbidden, r.status)
				require.Equal(t, apierror.CodeForbidden, r.errorCode())
				require.Contains(t, r.errorMessage(), "admin:cross-tenant")
				return
			}
			require.Equal(t, http.StatusOK, r.status)
			require.Equal(t, map[string]any{"tenant": tc.tenant, "user": tc.user}, r.body)
		})
	}
}

func TestEffectiveIdentityHeadersAreValidated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cross := "Bearer " + b.mint(t, devidp.TokenRequest{Tenant: "ops", Subject: "bob", Scopes: []string{"admin:cross-tenant"}})
	regular := "Bearer " + b.mint(t, devidp.TokenRequest{Tenant: "acme", Subject: "alice"})
	for _, tc := range []struct {
		header, value, message string
	}{
		{auth.HeaderEffectiveTenant, strings.Repeat("a", 5000), "must be a tenant slug"},
		{auth.HeaderEffectiveTenant, "Globex", "must be a tenant slug"},
		{auth.HeaderEffectiveTenant, "glo\x00bex", "must be a tenant slug"},
		{auth.HeaderEffectiveUser, strings.Repeat("u", 256), "must be at most 255 characters"},
		{auth.HeaderEffectiveUser, "carol\x00", "must not contain control characters"},
	} {
		r := b.call(t, "/v1/effective", cross, tc.header, tc.value)
		require.Equal(t, http.StatusUnprocessableEntity, r.status, "%s: %q", tc.header, tc.value)
		require.Equal(t, apierror.CodeValidation, r.errorCode())
		require.Contains(t, r.errorMessage(), "header "+tc.header+": "+tc.message)

		// Without the scope the header is refused whatever its value.
		r = b.call(t, "/v1/effective", regular, tc.header, tc.value)
		require.Equal(t, http.StatusForbidden, r.status)
	}
}

func TestHelpersWithoutMiddleware(t *testing.T) {
	t.Parallel()
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(http.MethodGet, "/", nil)
	_, ok := auth.LookupCaller(c)
	require.False(t, ok)
	require.Panics(t, func() { auth.CallerFrom(c) })
	_, _, err := auth.EffectiveIdentity(c)
	var apiErr *apierror.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnauthorized, apiErr.Status)

	auth.SetCaller(c, auth.Caller{Subject: "s", Tenant: "t"})
	require.Equal(t, "t", auth.CallerFrom(c).Tenant)
}

func TestTokenFromTokenEndpointVerifies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, err := b.server.Client().PostForm(b.issuer.URL()+"/token", url.Values{
		"grant_type": {"client_credentials"}, "client_id": {"ci-bot"},
		"scope": {"llm-tasks:write llm-tasks:read"}, "tenant_id": {"acme"},
	})
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body struct {
		AccessToken string `json:"access_token"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))

	caller, err := b.verifier.Verify(context.Background(), body.AccessToken)
	require.NoError(t, err)
	require.Equal(t, auth.Caller{Subject: "ci-bot", Tenant: "acme", Scopes: []string{"llm-tasks:write", "llm-tasks:read"}}, caller)
}

func TestTokensOutliveRestart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	before := b.issuer
	token := b.mint(t, devidp.TokenRequest{Tenant: "acme", Subject: "alice"})

	// Restart: reopen the issuer from the data dir and verify with a fresh
	// verifier (no cached keys).
	after := b.openIssuer(t)
	require.Equal(t, before.KeyID(), after.KeyID())
	fresh := auth.NewVerifier(after.URL(), audience, b.server.Client())
	caller, err := fresh.Verify(context.Background(), token)
	require.NoError(t, err)
	require.Equal(t, "alice", caller.Subject)
}

func TestLazyDiscovery(t *testing.T) {
	t.Parallel()
	// Reserve an address, then leave it closed: the issuer is not up yet.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	dataDir := t.TempDir()
	iss, err := devidp.Open(dataDir, "http://"+addr+devidp.Path)
	require.NoError(t, err)
	v := auth.NewVerifier(iss.URL(), audience, nil)
	token, err := iss.Mint(devidp.TokenRequest{Subject: "alice"})
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.Error(t, v.Ready(ctx))
	_, err = v.Verify(ctx, token)
	require.Error(t, err)
	var te *auth.TokenError
	require.False(t, errors.As(err, &te), "an unreachable issuer is not the token's fault")

	api := newAPI(v)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/v1/whoami", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	api.ServeHTTP(rec, req)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Contains(t, rec.Body.String(), apierror.CodeServiceUnavailable)

	// Now the listener comes up.
	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("address %s was taken meanwhile: %v", addr, err)
	}
	r := gin.New()
	iss.Routes(r)
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: r}}
	srv.Start()
	t.Cleanup(srv.Close)

	require.NoError(t, v.Ready(ctx))
	caller, err := v.Verify(ctx, token)
	require.NoError(t, err)
	require.Equal(t, "alice", caller.Subject)
}

// A verified token is remembered: the next request with it skips the
// signature, never past the token's expiry, and only that exact token.
// Not parallel: it counts the process's allocations.
func TestVerifiedTokensAreRemembered(t *testing.T) {
	b := setup(t)
	claims := b.validClaims()
	claims["exp"] = time.Now().Add(2 * time.Minute).Unix()
	token := b.signWithDevKey(t, claims)
	first, err := b.verifier.Verify(context.Background(), token)
	require.NoError(t, err)

	require.Less(t, verifyAllocs(t, b, token, first), uint64(10),
		"a remembered token is not parsed or verified again (a verification allocates hundreds of objects)")
	b.skew.Store(int64(59 * time.Second))
	require.Less(t, verifyAllocs(t, b, token, first), uint64(10), "remembered for a minute")
	b.skew.Store(int64(61 * time.Second))
	require.Greater(t, verifyAllocs(t, b, token, first), uint64(100), "verified again after a minute")

	// The same claims under a signature that does not verify.
	parts := strings.Split(token, ".")
	sig := []byte(parts[2])
	sig[0] = map[bool]byte{true: 'B', false: 'A'}[sig[0] == 'A']
	_, err = b.verifier.Verify(context.Background(), parts[0]+"."+parts[1]+"."+string(sig))
	require.ErrorIs(t, err, auth.ErrSignature)

	// A token expiring within the minute it is remembered.
	claims = b.validClaims()
	claims["exp"] = time.Now().Add(30 * time.Second).Unix()
	short := b.signWithDevKey(t, claims)
	b.skew.Store(0)
	caller, err := b.verifier.Verify(context.Background(), short)
	require.NoError(t, err)
	require.Less(t, verifyAllocs(t, b, short, caller), uint64(10), "remembered")
	b.skew.Store(int64(31 * time.Second))
	_, err = b.verifier.Verify(context.Background(), short)
	require.ErrorIs(t, err, auth.ErrExpired, "a remembered token expires at its exp")
	requireUnauthorized(t, b.call(t, "/v1/whoami", "Bearer "+short), "expired")
}

// verifyAllocs verifies token once, checks it names want, and returns the
// objects the process allocated meanwhile.
func verifyAllocs(t *testing.T, b *bundle, token string, want auth.Caller) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	caller, err := b.verifier.Verify(context.Background(), token)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Equal(t, want, caller)
	return after.Mallocs - before.Mallocs
}
