package devidp_test

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"
)

// authorizeRequest is an authorization request of the console's shape.
func authorizeRequest(b idpBundle, verifier string) url.Values {
	sum := sha256.Sum256([]byte(verifier))
	return url.Values{"response_type": {"code"}, "client_id": {"gateway-console"},
		"redirect_uri": {strings.TrimSuffix(b.issuer.URL(), "/dev/oidc") + "/console/oidc/callback"},
		"state":        {"st-1"}, "nonce": {"n-1"}, "scope": {"openid llm-tasks:read"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
}

// approveCode posts the sign-in form for req and returns the code the
// redirect carries.
func approveCode(t *testing.T, b idpBundle, req url.Values) string {
	t.Helper()
	form := url.Values{"subject": {"ada"}, "tenant_id": {"acme"}, "grant_scope": {"llm-tasks:read"}}
	for k, v := range req {
		form[k] = v
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(b.issuer.URL()+"/authorize", form)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	back, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, req.Get("redirect_uri"), strings.Split(back.String(), "?")[0])
	require.Equal(t, "st-1", back.Query().Get("state"))
	require.NotEmpty(t, back.Query().Get("code"))
	return back.Query().Get("code")
}

// The authorization code grant with PKCE: the form, a code for the
// client's redirect URI, and tokens for the right verifier only, once.
func TestAuthorizationCodeWithPKCE(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	verifier := "a-verifier-of-enough-length-to-be-a-real-one-0123456789"
	req := authorizeRequest(b, verifier)

	resp, err := http.Get(b.issuer.URL() + "/authorize?" + req.Encode())
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(page), `name="code_challenge"`)
	require.Contains(t, string(page), `value="llm-tasks:read"`, "the scopes asked for, openid left out")

	exchange := func(code, verifier string) tokenReply {
		return postToken(t, b, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {"gateway-console"},
			"redirect_uri": req["redirect_uri"], "code_verifier": {verifier}}, "")
	}
	code := approveCode(t, b, req)
	wrong := exchange(code, "another-verifier-of-enough-length-0123456789-abcdefgh")
	require.Equal(t, http.StatusBadRequest, wrong.status)
	require.Equal(t, "invalid_grant", wrong.body["error"])
	require.Equal(t, "invalid_grant", exchange(code, verifier).body["error"], "a code is tried once")

	code = approveCode(t, b, req)
	ok := exchange(code, verifier)
	require.Equal(t, http.StatusOK, ok.status, "%v", ok.body)
	var access struct {
		jwt.Claims
		Tenant string `json:"tenant_id"`
		Scope  string `json:"scope"`
	}
	token, err := jwt.ParseSigned(ok.body["access_token"].(string), []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	require.NoError(t, token.Claims(b.issuer.PublicKeys().Keys[0].Key, &access))
	require.Equal(t, "ada", access.Subject)
	require.Equal(t, "acme", access.Tenant)
	require.Equal(t, "llm-tasks:read", access.Scope)
	var id struct {
		jwt.Claims
		Nonce string `json:"nonce"`
	}
	token, err = jwt.ParseSigned(ok.body["id_token"].(string), []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	require.NoError(t, token.Claims(b.issuer.PublicKeys().Keys[0].Key, &id))
	require.Equal(t, jwt.Audience{"gateway-console"}, id.Audience)
	require.Equal(t, "n-1", id.Nonce)
	require.Equal(t, "invalid_grant", exchange(code, verifier).body["error"], "used")
}

// The dev provider redirects to its own origin only, and takes PKCE S256
// only.
func TestAuthorizeRefusesOtherRedirectsAndNoPKCE(t *testing.T) {
	t.Parallel()
	b := setupServer(t)
	for name, change := range map[string]func(url.Values){
		"another origin": func(q url.Values) { q.Set("redirect_uri", "https://evil.example/console/oidc/callback") },
		"no challenge":   func(q url.Values) { q.Del("code_challenge") },
		"plain":          func(q url.Values) { q.Set("code_challenge_method", "plain") },
		"implicit":       func(q url.Values) { q.Set("response_type", "token") },
	} {
		q := authorizeRequest(b, "v")
		change(q)
		resp, err := http.Get(b.issuer.URL() + "/authorize?" + q.Encode())
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, name)
	}
}
