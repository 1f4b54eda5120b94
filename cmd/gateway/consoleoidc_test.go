package main

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConsoleSignInThroughOIDC: on gateway dev, a person signs in to the
// console through dev's identity provider: authorization code with PKCE,
// through go-oidc, ending on the tenant's jobs page (docs/console.md,
// Signing in with OIDC).
func TestConsoleSignInThroughOIDC(t *testing.T) {
	t.Parallel()
	g := newGateway(t, "")
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar}

	// The console sends the person to the issuer's sign-in form.
	resp, err := browser.Get(g.url("/console/sign-in/oidc"))
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", page)
	require.Equal(t, "/dev/oidc/authorize", resp.Request.URL.Path)
	require.Equal(t, "S256", resp.Request.URL.Query().Get("code_challenge_method"))

	form := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(string(page), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	require.NotEmpty(t, form.Get("state"))
	form.Set("subject", "ada")
	form.Set("tenant_id", "acme")
	form.Set("grant_scope", "llm-tasks:read transcriptions:read")
	resp, err = browser.PostForm(g.url("/dev/oidc/authorize"), form)
	require.NoError(t, err)
	page, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", page)
	// The callback goes on to the jobs from its own page, so that a
	// browser sends the new SameSite=Strict cookie.
	require.Equal(t, "/console/oidc/callback", resp.Request.URL.Path)
	require.Contains(t, string(page), `content="0;url=/console/jobs"`)
	resp, err = browser.Get(g.url("/console/jobs"))
	require.NoError(t, err)
	page, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", page)
	require.Equal(t, "/console/jobs", resp.Request.URL.Path, "signed in, on the jobs page")
	require.Contains(t, string(page), "acme")

	// A second pass through the callback with the same state is refused:
	// the sign-in's cookie is gone.
	replay := url.Values{"code": {"x"}, "state": {form.Get("state")}}
	resp, err = browser.Get(g.url("/console/oidc/callback?" + replay.Encode()))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}
