package api_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// Origins and the dev secret of the codec tests.
const (
	uiOrigin    = "https://temporal-ui.example.com"
	otherOrigin = "https://elsewhere.example.com"
	devOrigin   = "http://127.0.0.1:8233"
	devSecret   = "DEVSECRET4TESTS2345670ABCD"
)

// codecKeys is the codec tests' keyring, shared by their Encryptors.
var codecKeys = func() *payloadcodec.Keyring {
	keys, err := payloadcodec.NewKeyring("k1", map[string][]byte{"k1": payloadcodec.GenerateKey()})
	if err != nil {
		panic(err)
	}
	return keys
}()

// codecSetup is an API whose codec server reads the secrets of enc, the
// deployment's Encryptor, which makes a scope's secret on first use as
// the workers' does.
type codecSetup struct {
	*bundle
	enc     *payloadcodec.Encryptor
	secrets payloadcodec.ExistingSecrets
}

// setupCodec serves the codec server on enc's ReadOnly view with secrets
// in memory, allowing uiOrigin and devOrigin, and the dev routes at
// devSecret.
func setupCodec(t *testing.T) codecSetup {
	t.Helper()
	secrets := payloadcodec.NewMemorySecrets(true)
	return setupCodecWith(t, storetest.SQLite, func(*store.Store) payloadcodec.ScopeSecrets { return secrets })
}

// setupCodecWith is setupCodec with the scope secrets secretsOf gives for
// the API's store.
func setupCodecWith(t *testing.T, openStore func(testing.TB) *store.Store, secretsOf func(*store.Store) payloadcodec.ScopeSecrets, configure ...func(*api.Config)) codecSetup {
	t.Helper()
	var enc *payloadcodec.Encryptor
	var secrets payloadcodec.ScopeSecrets
	b := setupConfigured(t, func(tb testing.TB) *store.Store {
		st := openStore(tb)
		secrets = secretsOf(st)
		enc = payloadcodec.New(codecKeys, secrets, payloadcodec.Options{})
		return st
	}, func(c *api.Config) {
		c.Codec = enc.ReadOnly()
		c.CodecOrigins = []string{uiOrigin, devOrigin}
		c.CodecDevSecret = devSecret
		for _, f := range configure {
			f(c)
		}
	})
	return codecSetup{bundle: b, enc: enc, secrets: secrets.(payloadcodec.ExistingSecrets)}
}

// payloadsBody is payloads as a codec request's protojson body.
func payloadsBody(t *testing.T, payloads ...*commonpb.Payload) []byte {
	t.Helper()
	raw, err := protojson.Marshal(&commonpb.Payloads{Payloads: payloads})
	require.NoError(t, err)
	return raw
}

// sealed is value encrypted in scope by enc.
func sealed(t *testing.T, enc *payloadcodec.Encryptor, scope, value string) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(value)
	require.NoError(t, err)
	out, err := enc.Codec(scope).Encode([]*commonpb.Payload{p})
	require.NoError(t, err)
	require.NotContains(t, string(out[0].GetData()), value)
	return out[0]
}

// encrypted is value encrypted in tenantA's scope, as a codec request's
// body.
func encrypted(t *testing.T, enc *payloadcodec.Encryptor, value string) []byte {
	t.Helper()
	return payloadsBody(t, sealed(t, enc, tenantA, value))
}

// decodedAll are the strings of a codec answer.
func decodedAll(t *testing.T, r *response) []string {
	t.Helper()
	r.requireStatus(t, http.StatusOK)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	var out commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(r.Body, &out))
	var values []string
	for _, p := range out.Payloads {
		var s string
		require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &s))
		values = append(values, s)
	}
	return values
}

// decoded is the single string of a codec answer.
func decoded(t *testing.T, r *response) string {
	t.Helper()
	values := decodedAll(t, r)
	require.Len(t, values, 1)
	return values[0]
}

// superAdminCodecToken is a super-admin's admin:codec token, for tenant.
func (s codecSetup) superAdminCodecToken(t *testing.T, tenant string) string {
	t.Helper()
	return s.mint(t, devidp.TokenRequest{Tenant: tenant, Subject: "root", Scopes: []string{auth.ScopeCodec}, Roles: []string{auth.RoleSuperAdmin}, Audience: audience})
}

func TestCodecDecodesForOperators(t *testing.T) {
	t.Parallel()
	s := setupCodec(t)
	body := encrypted(t, s.enc, "the customer's words")
	r := s.do(t, http.MethodPost, "/codec/decode", s.token(t, auth.ScopeCodec), body, "X-Namespace", "default", "Origin", uiOrigin)
	require.Equal(t, "the customer's words", decoded(t, r))
	require.Equal(t, uiOrigin, r.Header.Get("Access-Control-Allow-Origin"))
	require.Equal(t, "true", r.Header.Get("Access-Control-Allow-Credentials"))
}

// TestCodecSpeaksTheSDKsProtocol: the SDK's remote codec client encodes
// and decodes through the codec server.
func TestCodecSpeaksTheSDKsProtocol(t *testing.T) {
	t.Parallel()
	s := setupCodec(t)
	token := s.token(t, auth.ScopeCodec)
	remote := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{
		Endpoint: s.server.URL + api.CodecPath,
		Client:   *s.server.Client(),
		ModifyRequest: func(r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+token)
			r.Header.Set(payloadcodec.ScopeHeader, tenantA)
			return nil
		},
	})
	originals := []*commonpb.Payload{sealed(t, s.enc, tenantA, "an earlier job's words")} // the tenant has a secret
	p, err := converter.GetDefaultDataConverter().ToPayload("shown in the UI")
	require.NoError(t, err)
	originals = append(originals, p)
	out, err := remote.Encode(originals[1:])
	require.NoError(t, err)
	scope, isEncrypted := payloadcodec.PayloadScope(out[0])
	require.True(t, isEncrypted)
	require.Equal(t, tenantA, scope)
	back, err := remote.Decode(append(out, p))
	require.NoError(t, err)
	require.Equal(t, p.GetData(), back[0].GetData())
	require.Equal(t, p.GetData(), back[1].GetData(), "a payload never encrypted comes back as it is")
}

func TestCodecEncodesInTheScopeGiven(t *testing.T) {
	t.Parallel()
	s := setupCodec(t)
	sealed(t, s.enc, tenantA, "an earlier job's words") // the tenant has a secret
	p, err := converter.GetDefaultDataConverter().ToPayload("a signal")
	require.NoError(t, err)
	raw := payloadsBody(t, p)
	token := s.token(t, auth.ScopeCodec)

	r := s.do(t, http.MethodPost, "/codec/encode", token, raw)
	requireError(t, r, http.StatusBadRequest, "INVALID_PAYLOAD_SCOPE", "header "+payloadcodec.ScopeHeader)

	r = s.do(t, http.MethodPost, "/codec/encode", token, raw, payloadcodec.ScopeHeader, tenantA)
	r.requireStatus(t, http.StatusOK)
	var out commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(r.Body, &out))
	require.Len(t, out.Payloads, 1)
	require.NotContains(t, string(out.Payloads[0].GetData()), "a signal")
	plain, err := s.enc.Decoder().Decode(out.Payloads)
	require.NoError(t, err)
	var v string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(plain[0], &v))
	require.Equal(t, "a signal", v)
}

// TestCodecReachesTheTokensTenantOnly: an admin:codec token with a tenant
// decodes and encodes in its tenant's scope only, a request with one
// payload of another scope is refused whole, and a super-admin reaches
// every tenant's scope and _system.
func TestCodecReachesTheTokensTenantOnly(t *testing.T) {
	t.Parallel()
	s := setupCodec(t)
	mine := sealed(t, s.enc, tenantA, "acme's words")
	theirs := sealed(t, s.enc, tenantB, "globex's words")
	system := sealed(t, s.enc, payloadcodec.SystemScope, "the system's words")
	p, err := converter.GetDefaultDataConverter().ToPayload("a signal")
	require.NoError(t, err)
	acme := s.token(t, auth.ScopeCodec)

	require.Equal(t, "acme's words", decoded(t, s.do(t, http.MethodPost, "/codec/decode", acme, payloadsBody(t, mine))))
	for _, refused := range [][]*commonpb.Payload{{theirs}, {mine, theirs}} {
		r := s.do(t, http.MethodPost, "/codec/decode", acme, payloadsBody(t, refused...))
		msg := requireError(t, r, http.StatusForbidden, "FORBIDDEN")
		require.Contains(t, msg, `"`+tenantB+`"`, "names the scope")
		require.NotContains(t, string(r.Body), "words")
	}
	r := s.do(t, http.MethodPost, "/codec/decode", acme, payloadsBody(t, system))
	requireError(t, r, http.StatusForbidden, "FORBIDDEN", payloadcodec.SystemScope)
	tenantless := s.mint(t, devidp.TokenRequest{Subject: "tool", Scopes: []string{auth.ScopeCodec}, Audience: audience})
	r = s.do(t, http.MethodPost, "/codec/decode", tenantless, payloadsBody(t, mine))
	requireError(t, r, http.StatusForbidden, "FORBIDDEN")

	for _, scope := range []string{tenantB, payloadcodec.SystemScope} {
		r = s.do(t, http.MethodPost, "/codec/encode", acme, payloadsBody(t, p), payloadcodec.ScopeHeader, scope)
		requireError(t, r, http.StatusForbidden, "FORBIDDEN", scope)
	}
	r = s.do(t, http.MethodPost, "/codec/encode", acme, payloadsBody(t, p), payloadcodec.ScopeHeader, tenantA)
	r.requireStatus(t, http.StatusOK)

	for _, tenant := range []string{tenantA, ""} {
		root := s.superAdminCodecToken(t, tenant)
		r = s.do(t, http.MethodPost, "/codec/decode", root, payloadsBody(t, mine, theirs, system))
		require.Equal(t, []string{"acme's words", "globex's words", "the system's words"}, decodedAll(t, r))
		r = s.do(t, http.MethodPost, "/codec/encode", root, payloadsBody(t, p), payloadcodec.ScopeHeader, tenantB)
		r.requireStatus(t, http.StatusOK)
	}
}

// TestCodecRefusesBadScopes: a scope that is neither a tenant slug nor
// _system is refused 400 before any secret is read or made.
func TestCodecRefusesBadScopes(t *testing.T) {
	t.Parallel()
	s := setupCodec(t)
	root := s.superAdminCodecToken(t, "")
	p, err := converter.GetDefaultDataConverter().ToPayload("a signal")
	require.NoError(t, err)
	for _, scope := range []string{strings.Repeat("a", 3000), "Bad Scope!", "_other", "a"} {
		r := s.do(t, http.MethodPost, "/codec/encode", root, payloadsBody(t, p), payloadcodec.ScopeHeader, scope)
		requireError(t, r, http.StatusBadRequest, "INVALID_PAYLOAD_SCOPE", "header "+payloadcodec.ScopeHeader)
		require.NotContains(t, string(r.Body), strings.Repeat("a", 100), "the scope is not echoed")

		forged := sealed(t, s.enc, tenantA, "acme's words")
		forged.Metadata[payloadcodec.MetadataScope] = []byte(scope)
		r = s.do(t, http.MethodPost, "/codec/decode", root, payloadsBody(t, forged))
		requireError(t, r, http.StatusBadRequest, "INVALID_PAYLOAD_SCOPE", "/payloads/0")
		require.NotContains(t, string(r.Body), strings.Repeat("a", 100))

		_, err := s.secrets.ExistingSecret(context.Background(), scope)
		require.ErrorIs(t, err, payloadcodec.ErrScopeShredded, "no secret made")
	}
	noScope := sealed(t, s.enc, tenantA, "acme's words")
	delete(noScope.Metadata, payloadcodec.MetadataScope)
	r := s.do(t, http.MethodPost, "/codec/decode", root, payloadsBody(t, noScope))
	requireError(t, r, http.StatusBadRequest, "INVALID_PAYLOAD_SCOPE", "/payloads/0")
}

// TestCodecMakesNoSecret: decoding or encoding in a scope that has no
// secret in the store (never used, or shredded) answers 409 and leaves
// payload_secrets without a row for it.
func TestCodecMakesNoSecret(t *testing.T) {
	t.Parallel()
	s := setupCodecWith(t, storetest.SQLite, func(st *store.Store) payloadcodec.ScopeSecrets { return st.Keys.PayloadSecrets() })
	root := s.superAdminCodecToken(t, "")
	elsewhere := payloadcodec.New(codecKeys, payloadcodec.NewMemorySecrets(true), payloadcodec.Options{})
	unknown := sealed(t, elsewhere, "initech", "words")

	r := s.do(t, http.MethodPost, "/codec/decode", root, payloadsBody(t, unknown))
	msg := requireError(t, r, http.StatusConflict, "PAYLOAD_UNDECRYPTABLE", `"initech"`)
	require.Contains(t, msg, "no payload secret")
	p, err := converter.GetDefaultDataConverter().ToPayload("a signal")
	require.NoError(t, err)
	r = s.do(t, http.MethodPost, "/codec/encode", root, payloadsBody(t, p), payloadcodec.ScopeHeader, "hooli")
	requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", "header "+payloadcodec.ScopeHeader, `"hooli"`)
	for _, scope := range []string{"initech", "hooli"} {
		_, err := s.store.Keys.PayloadSecrets().ExistingSecret(context.Background(), scope)
		require.ErrorIs(t, err, payloadcodec.ErrScopeShredded, "no row for %s", scope)
	}
}

func TestCodecNeedsATokenWithAdminCodec(t *testing.T) {
	t.Parallel()
	s := setupCodec(t)
	body := encrypted(t, s.enc, "secret")
	for _, path := range []string{"/codec/decode", "/codec/encode"} {
		r := s.do(t, http.MethodPost, path, "", body, payloadcodec.ScopeHeader, tenantA)
		requireError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		r = s.do(t, http.MethodPost, path, "", body, payloadcodec.ScopeHeader, tenantA, "Origin", uiOrigin)
		requireError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		r = s.do(t, http.MethodPost, path, s.token(t, allScopes(auth.ScopeCrossTenant)...), body, payloadcodec.ScopeHeader, tenantA)
		requireError(t, r, http.StatusForbidden, "INSUFFICIENT_SCOPE", auth.ScopeCodec)
		require.NotContains(t, string(r.Body), "secret")
	}
}

// TestCodecDevSecret: gateway dev's embedded UI, on loopback, decodes
// every scope without a token at the endpoint holding the dev secret;
// the Origin header alone opens nothing, nor does a wrong secret, and a
// token sent there is still checked.
func TestCodecDevSecret(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	secrets := payloadcodec.NewMemorySecrets(true)
	s := setupCodecWith(t, storetest.SQLite, func(*store.Store) payloadcodec.ScopeSecrets { return secrets }, func(c *api.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	body := payloadsBody(t, sealed(t, s.enc, tenantB, "dev payload"))
	r := s.do(t, http.MethodPost, "/codec/decode", "", body, "Origin", devOrigin)
	requireError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")

	dev := api.CodecDevPath + "/" + devSecret
	r = s.do(t, http.MethodPost, dev+"/decode", "", body, "Origin", devOrigin)
	require.Equal(t, "dev payload", decoded(t, r))
	require.Equal(t, devOrigin, r.Header.Get("Access-Control-Allow-Origin"))
	r = s.do(t, http.MethodOptions, dev+"/decode", "", nil, "Origin", devOrigin, "Access-Control-Request-Method", "POST")
	require.Equal(t, http.StatusNoContent, r.Status, "body: %s", r.Body)
	require.Equal(t, devOrigin, r.Header.Get("Access-Control-Allow-Origin"))

	for _, wrong := range []string{devSecret[:len(devSecret)-1] + "X", "x"} {
		r = s.do(t, http.MethodPost, api.CodecDevPath+"/"+wrong+"/decode", "", body, "Origin", devOrigin)
		requireError(t, r, http.StatusNotFound, "NOT_FOUND")
	}
	r = s.do(t, http.MethodPost, dev+"/decode", s.token(t, "transcriptions:read"), body, "Origin", devOrigin)
	requireError(t, r, http.StatusForbidden, "INSUFFICIENT_SCOPE", auth.ScopeCodec)
	r = s.do(t, http.MethodPost, dev+"/decode", s.token(t, auth.ScopeCodec), body, "Origin", devOrigin)
	requireError(t, r, http.StatusForbidden, "FORBIDDEN", tenantB)
	require.Contains(t, logs.String(), api.CodecDevPath+"/…/decode", "the requests are logged")
	require.NotContains(t, logs.String(), devSecret, "without the secret")
}

// TestCodecErrorsAreTheEnvelope: the codec's refusals and failures answer
// the API's error body with the request's id; a failure of the secrets'
// store is a 503 that says nothing of it.
func TestCodecErrorsAreTheEnvelope(t *testing.T) {
	t.Parallel()
	s := setupCodec(t)
	root := s.superAdminCodecToken(t, "")
	r := s.do(t, http.MethodPost, "/codec/decode", root, `{"payloads": 7}`)
	requireError(t, r, http.StatusBadRequest, "MALFORMED_JSON")

	tampered := sealed(t, s.enc, tenantA, "acme's words")
	tampered.Data[len(tampered.Data)-1] ^= 1
	r = s.do(t, http.MethodPost, "/codec/decode", root, payloadsBody(t, tampered))
	requireError(t, r, http.StatusConflict, "PAYLOAD_UNDECRYPTABLE", `"k1"`)
	unknownKey := sealed(t, s.enc, tenantA, "acme's words")
	unknownKey.Metadata[payloadcodec.MetadataKeyID] = []byte("k9")
	r = s.do(t, http.MethodPost, "/codec/decode", root, payloadsBody(t, unknownKey))
	requireError(t, r, http.StatusConflict, "PAYLOAD_UNDECRYPTABLE", `"k9"`)

	broken := setupCodecWith(t, storetest.SQLite, func(*store.Store) payloadcodec.ScopeSecrets { return failingSecrets{} })
	r = broken.do(t, http.MethodPost, "/codec/decode", broken.superAdminCodecToken(t, ""), payloadsBody(t, sealed(t, s.enc, tenantA, "acme's words")))
	requireError(t, r, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
	require.Equal(t, "5", r.Header.Get("Retry-After"))
	require.NotContains(t, string(r.Body), "10.0.0.5")
}

// failingSecrets fail as a database out of reach does.
type failingSecrets struct{}

func (failingSecrets) Secret(context.Context, string) ([]byte, error) {
	return nil, errors.New("dial tcp 10.0.0.5:5432: connection refused")
}

func (f failingSecrets) ExistingSecret(ctx context.Context, scope string) ([]byte, error) {
	return f.Secret(ctx, scope)
}

func TestCodecPreflight(t *testing.T) {
	t.Parallel()
	s := setupCodec(t)
	for _, path := range []string{"/codec/decode", "/codec/encode"} {
		r := s.do(t, http.MethodOptions, path, "", nil, "Origin", uiOrigin,
			"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization,content-type,x-namespace")
		require.Equal(t, http.StatusNoContent, r.Status, "body: %s", r.Body)
		require.Equal(t, uiOrigin, r.Header.Get("Access-Control-Allow-Origin"))
		require.Equal(t, "true", r.Header.Get("Access-Control-Allow-Credentials"))
		require.Contains(t, r.Header.Get("Access-Control-Allow-Methods"), "POST")
		for _, h := range []string{"Authorization", "Content-Type", "X-Namespace", "X-Payload-Scope"} {
			require.Contains(t, r.Header.Get("Access-Control-Allow-Headers"), h)
		}

		r = s.do(t, http.MethodOptions, path, "", nil, "Origin", otherOrigin, "Access-Control-Request-Method", "POST")
		for name := range r.Header {
			require.NotContains(t, name, "Access-Control-", "no CORS headers for %s", otherOrigin)
		}
	}
	r := s.do(t, http.MethodPost, "/codec/decode", s.token(t, auth.ScopeCodec), `{"payloads":[]}`, "Origin", otherOrigin)
	r.requireStatus(t, http.StatusOK)
	require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"))
}

func TestCodecBodyIsLimited(t *testing.T) {
	t.Parallel()
	s := setupCodec(t)
	big := make([]byte, api.CodecMaxBodyBytes+1)
	for _, path := range []string{"/codec/decode", api.CodecDevPath + "/" + devSecret + "/decode"} {
		r := s.do(t, http.MethodPost, path, s.token(t, auth.ScopeCodec), big)
		requireError(t, r, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
	}
}

func TestCodecWithoutKeysIsNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.token(t, auth.ScopeCodec)
	for _, path := range []string{"/codec/decode", "/codec/encode"} {
		requireError(t, b.do(t, http.MethodPost, path, token, `{"payloads":[]}`), http.StatusNotFound, "NOT_FOUND")
		requireError(t, b.do(t, http.MethodOptions, path, "", nil, "Origin", uiOrigin), http.StatusNotFound, "NOT_FOUND")
	}
}

// TestCodecDevSecretNotTraced: with tracing on, no span holds the dev
// secret, which the path of gateway dev's codec requests carries; the
// other routes are traced. Not parallel: it sets the global tracer
// provider otelgin uses.
func TestCodecDevSecretNotTraced(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	previous := otel.GetTracerProvider()
	otel.SetTracerProvider(provider)
	t.Cleanup(func() {
		otel.SetTracerProvider(previous)
		_ = provider.Shutdown(context.Background())
	})
	secrets := payloadcodec.NewMemorySecrets(true)
	s := setupCodecWith(t, storetest.SQLite, func(*store.Store) payloadcodec.ScopeSecrets { return secrets }, func(c *api.Config) {
		c.Tracing = true
	})
	body := payloadsBody(t, sealed(t, s.enc, tenantB, "dev payload"))
	r := s.do(t, http.MethodPost, api.CodecDevPath+"/"+devSecret+"/decode", "", body, "Origin", devOrigin)
	require.Equal(t, "dev payload", decoded(t, r))
	r = s.do(t, http.MethodPost, api.CodecDevPath+"/"+devSecret+"/nothing-here", "", body)
	requireError(t, r, http.StatusNotFound, "NOT_FOUND")
	r = s.do(t, http.MethodPost, "/codec/decode", s.superAdminCodecToken(t, ""), body)
	require.Equal(t, "dev payload", decoded(t, r))

	require.NoError(t, provider.ForceFlush(context.Background()))
	recorded := spans.GetSpans()
	require.NotEmpty(t, recorded, "the token route is traced")
	for _, span := range recorded {
		require.NotContains(t, span.Name, devSecret)
		for _, attr := range span.Attributes {
			require.NotContains(t, attr.Value.String(), devSecret, "span %q, attribute %s", span.Name, attr.Key)
		}
	}
}
