package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// Origins of the codec tests.
const (
	uiOrigin    = "https://temporal-ui.example.com"
	otherOrigin = "https://elsewhere.example.com"
	openOrigin  = "http://127.0.0.1:8233"
)

// setupCodec serves an API whose codec server is a real Encryptor's
// handler, allowing uiOrigin and openOrigin, the latter without a token;
// it returns the Encryptor too.
func setupCodec(t *testing.T) (*bundle, *payloadcodec.Encryptor) {
	t.Helper()
	keys, err := payloadcodec.NewKeyring("k1", map[string][]byte{"k1": payloadcodec.GenerateKey()})
	require.NoError(t, err)
	enc := payloadcodec.New(keys, payloadcodec.NewMemorySecrets(true), payloadcodec.Options{})
	b := setupConfigured(t, storetest.SQLite, func(c *api.Config) {
		c.Codec = enc.Handler()
		c.CodecOrigins = []string{uiOrigin, openOrigin}
		c.CodecOpenOrigins = []string{openOrigin}
	})
	return b, enc
}

// encrypted is value encrypted in tenantA's scope, as protojson Payloads.
func encrypted(t *testing.T, enc *payloadcodec.Encryptor, value string) []byte {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(value)
	require.NoError(t, err)
	sealed, err := enc.Codec(tenantA).Encode([]*commonpb.Payload{p})
	require.NoError(t, err)
	require.NotContains(t, string(sealed[0].GetData()), value)
	raw, err := protojson.Marshal(&commonpb.Payloads{Payloads: sealed})
	require.NoError(t, err)
	return raw
}

// decoded is the single string of a codec answer.
func decoded(t *testing.T, r *response) string {
	t.Helper()
	r.requireStatus(t, http.StatusOK)
	var out commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(r.Body, &out))
	require.Len(t, out.Payloads, 1)
	var s string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(out.Payloads[0], &s))
	return s
}

func TestCodecDecodesForOperators(t *testing.T) {
	t.Parallel()
	b, enc := setupCodec(t)
	body := encrypted(t, enc, "the customer's words")
	r := b.do(t, http.MethodPost, "/codec/decode", b.token(t, auth.ScopeCodec), body, "X-Namespace", "default", "Origin", uiOrigin)
	require.Equal(t, "the customer's words", decoded(t, r))
	require.Equal(t, uiOrigin, r.Header.Get("Access-Control-Allow-Origin"))
	require.Equal(t, "true", r.Header.Get("Access-Control-Allow-Credentials"))
}

func TestCodecEncodesInTheScopeGiven(t *testing.T) {
	t.Parallel()
	b, enc := setupCodec(t)
	p, err := converter.GetDefaultDataConverter().ToPayload("a signal")
	require.NoError(t, err)
	raw, err := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{p}})
	require.NoError(t, err)
	token := b.token(t, auth.ScopeCodec)

	r := b.do(t, http.MethodPost, "/codec/encode", token, raw)
	require.Equal(t, http.StatusBadRequest, r.Status, "no %s: %s", payloadcodec.ScopeHeader, r.Body)

	r = b.do(t, http.MethodPost, "/codec/encode", token, raw, payloadcodec.ScopeHeader, tenantA)
	r.requireStatus(t, http.StatusOK)
	var out commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(r.Body, &out))
	require.Len(t, out.Payloads, 1)
	require.NotContains(t, string(out.Payloads[0].GetData()), "a signal")
	plain, err := enc.Decoder().Decode(out.Payloads)
	require.NoError(t, err)
	var s string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(plain[0], &s))
	require.Equal(t, "a signal", s)
}

func TestCodecNeedsATokenWithAdminCodec(t *testing.T) {
	t.Parallel()
	b, enc := setupCodec(t)
	body := encrypted(t, enc, "secret")
	for _, path := range []string{"/codec/decode", "/codec/encode"} {
		r := b.do(t, http.MethodPost, path, "", body, payloadcodec.ScopeHeader, tenantA)
		requireError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		r = b.do(t, http.MethodPost, path, "", body, payloadcodec.ScopeHeader, tenantA, "Origin", uiOrigin)
		requireError(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		r = b.do(t, http.MethodPost, path, b.token(t, allScopes(auth.ScopeCrossTenant)...), body, payloadcodec.ScopeHeader, tenantA)
		requireError(t, r, http.StatusForbidden, "INSUFFICIENT_SCOPE", auth.ScopeCodec)
		require.NotContains(t, string(r.Body), "secret")
	}
}

// TestCodecOpenOrigin: gateway dev's embedded UI, on loopback, needs no
// token; a token it sends is still checked.
func TestCodecOpenOrigin(t *testing.T) {
	t.Parallel()
	b, enc := setupCodec(t)
	body := encrypted(t, enc, "dev payload")
	r := b.do(t, http.MethodPost, "/codec/decode", "", body, "Origin", openOrigin)
	require.Equal(t, "dev payload", decoded(t, r))
	require.Equal(t, openOrigin, r.Header.Get("Access-Control-Allow-Origin"))

	r = b.do(t, http.MethodPost, "/codec/decode", b.token(t, "transcriptions:read"), body, "Origin", openOrigin)
	requireError(t, r, http.StatusForbidden, "INSUFFICIENT_SCOPE", auth.ScopeCodec)
}

func TestCodecPreflight(t *testing.T) {
	t.Parallel()
	b, _ := setupCodec(t)
	for _, path := range []string{"/codec/decode", "/codec/encode"} {
		r := b.do(t, http.MethodOptions, path, "", nil, "Origin", uiOrigin,
			"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization,content-type,x-namespace")
		require.Equal(t, http.StatusNoContent, r.Status, "body: %s", r.Body)
		require.Equal(t, uiOrigin, r.Header.Get("Access-Control-Allow-Origin"))
		require.Equal(t, "true", r.Header.Get("Access-Control-Allow-Credentials"))
		require.Contains(t, r.Header.Get("Access-Control-Allow-Methods"), "POST")
		for _, h := range []string{"Authorization", "Content-Type", "X-Namespace", "X-Payload-Scope"} {
			require.Contains(t, r.Header.Get("Access-Control-Allow-Headers"), h)
		}

		r = b.do(t, http.MethodOptions, path, "", nil, "Origin", otherOrigin, "Access-Control-Request-Method", "POST")
		for name := range r.Header {
			require.NotContains(t, name, "Access-Control-", "no CORS headers for %s", otherOrigin)
		}
	}
	r := b.do(t, http.MethodPost, "/codec/decode", b.token(t, auth.ScopeCodec), `{"payloads":[]}`, "Origin", otherOrigin)
	r.requireStatus(t, http.StatusOK)
	require.Empty(t, r.Header.Get("Access-Control-Allow-Origin"))
}

func TestCodecBodyIsLimited(t *testing.T) {
	t.Parallel()
	b, _ := setupCodec(t)
	big := make([]byte, api.CodecMaxBodyBytes+1)
	r := b.do(t, http.MethodPost, "/codec/decode", b.token(t, auth.ScopeCodec), big)
	requireError(t, r, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
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
