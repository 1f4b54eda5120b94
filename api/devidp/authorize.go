package devidp

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// The authorization code grant with PKCE (RFC 6749 section 4.1, RFC
// 7636), for the console's sign-in (docs/console.md, Signing in with
// OIDC). Dev only: the person says who they are on a form, nothing checks
// it, and codes live in memory.

// codeTTL is how long an authorization code may be exchanged.
const codeTTL = time.Minute

// DefaultPersonScopes are the scopes the sign-in form offers when the
// client asks for none beyond openid.
var DefaultPersonScopes = []string{
	"transcriptions:read", "transcriptions:write", "translations:read", "translations:write",
	"video-analyses:read", "video-analyses:write", "llm-tasks:read", "llm-tasks:write",
	"usage:read", "keys:read", "keys:write",
}

// grant is an authorization code not yet exchanged.
type grant struct {
	clientID, redirectURI, challenge, nonce string
	token                                   TokenRequest
	expires                                 time.Time
}

// codeStore holds the issued codes; copies of an Issuer share it.
type codeStore struct {
	mu     sync.Mutex
	grants map[string]grant
}

// take removes and returns code's grant, if issued and not expired.
func (s *codeStore) take(code string, now time.Time) (grant, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.grants[code]
	delete(s.grants, code)
	for c, other := range s.grants {
		if now.After(other.expires) {
			delete(s.grants, c)
		}
	}
	return g, ok && now.Before(g.expires)
}

func (s *codeStore) put(code string, g grant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grants == nil {
		s.grants = map[string]grant{}
	}
	s.grants[code] = g
}

// authorizeForm is the dev sign-in page: who the person is.
var authorizeForm = template.Must(template.New("authorize").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Dev identity provider: sign in</title></head>
<body><main>
<h1>Dev identity provider</h1>
<p>Development only: say who you are; nothing is checked.</p>
<form method="post" action="{{.Action}}">
{{range $name, $value := .Params}}<input type="hidden" name="{{$name}}" value="{{$value}}">
{{end}}<p><label for="subject">Subject</label> <input id="subject" name="subject" value="dev-person" required></p>
<p><label for="tenant_id">Tenant</label> <input id="tenant_id" name="tenant_id" value="acme"></p>
<p><label for="grant_scope">Scopes</label> <input id="grant_scope" name="grant_scope" size="80" value="{{.Scopes}}"></p>
<p><label for="roles">Roles</label> <input id="roles" name="roles" value=""></p>
<p><button type="submit">Sign in</button></p>
</form>
</main></body></html>`))

// authorizeParams are the authorization request's parameters the form
// carries on to its POST.
var authorizeParams = []string{"response_type", "client_id", "redirect_uri", "state", "nonce", "code_challenge", "code_challenge_method", "scope"}

// authorize serves GET {Path}/authorize: the form, after checking the
// request.
func (i *Issuer) authorize(c *gin.Context) {
	q := c.Request.URL.Query()
	if !i.checkAuthorizeRequest(c, q) {
		return
	}
	params := map[string]string{}
	for _, name := range authorizeParams {
		params[name] = q.Get(name)
	}
	var scopes []string
	for _, s := range strings.Fields(q.Get("scope")) {
		if s != "openid" && s != "profile" && s != "email" && s != "offline_access" {
			scopes = append(scopes, s)
		}
	}
	if len(scopes) == 0 {
		scopes = DefaultPersonScopes
	}
	c.Header("Cache-Control", "no-store")
	c.Header("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
	c.Header("Content-Type", "text/html; charset=utf-8")
	c.Status(http.StatusOK)
	_ = authorizeForm.Execute(c.Writer, map[string]any{"Action": i.url + "/authorize", "Params": params, "Scopes": strings.Join(scopes, " ")})
}

// approve serves POST {Path}/authorize: the form's answer becomes a code,
// sent back to the client's redirect URI.
func (i *Issuer) approve(c *gin.Context) {
	if err := c.Request.ParseForm(); err != nil {
		c.String(http.StatusBadRequest, "the form could not be read")
		return
	}
	form := c.Request.PostForm
	if !i.checkAuthorizeRequest(c, form) {
		return
	}
	token := TokenRequest{Tenant: strings.TrimSpace(form.Get("tenant_id")), Subject: strings.TrimSpace(form.Get("subject")),
		Scopes: strings.Fields(form.Get("grant_scope")), Roles: strings.Fields(form.Get("roles"))}
	if _, err := i.Mint(token); err != nil { // the same checks the token endpoint will make
		c.String(http.StatusBadRequest, err.Error())
		return
	}
	code := randomCode()
	i.codes.put(code, grant{clientID: form.Get("client_id"), redirectURI: form.Get("redirect_uri"),
		challenge: form.Get("code_challenge"), nonce: form.Get("nonce"), token: token, expires: i.now().Add(codeTTL)})
	back, _ := url.Parse(form.Get("redirect_uri")) // checked
	q := back.Query()
	q.Set("code", code)
	q.Set("state", form.Get("state"))
	back.RawQuery = q.Encode()
	c.Redirect(http.StatusSeeOther, back.String())
}

// checkAuthorizeRequest answers 400 and returns false for a request this
// provider does not take: only response_type code with an S256 PKCE
// challenge, to a redirect URI of the issuer's own origin (so the dev
// provider redirects nowhere else).
func (i *Issuer) checkAuthorizeRequest(c *gin.Context, q url.Values) bool {
	problem := ""
	switch {
	case q.Get("response_type") != "code":
		problem = "response_type must be code"
	case q.Get("client_id") == "":
		problem = "client_id is required"
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		problem = "a PKCE code_challenge with code_challenge_method S256 is required"
	case !i.sameOrigin(q.Get("redirect_uri")):
		problem = "redirect_uri must be an address of the issuer's own origin"
	}
	if problem != "" {
		c.String(http.StatusBadRequest, "dev identity provider: "+problem)
		return false
	}
	return true
}

func (i *Issuer) sameOrigin(raw string) bool {
	u, err := url.Parse(raw)
	issuer, _ := url.Parse(i.url)
	return err == nil && u.Scheme == issuer.Scheme && u.Host == issuer.Host
}

// exchange is the token endpoint's authorization_code grant: the code's
// access token, and an ID token for the client with the request's nonce.
func (i *Issuer) exchange(c *gin.Context, clientID string, form url.Values) {
	g, ok := i.codes.take(form.Get("code"), i.now())
	switch {
	case !ok:
		oauthError(c, http.StatusBadRequest, "invalid_grant", "the code is unknown, used or expired")
		return
	case form.Get("redirect_uri") != g.redirectURI || clientID != g.clientID:
		oauthError(c, http.StatusBadRequest, "invalid_grant", "redirect_uri or client_id differs from the authorization request's")
		return
	case !pkceMatches(form.Get("code_verifier"), g.challenge):
		oauthError(c, http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge")
		return
	}
	access, err := i.Mint(g.token)
	if err != nil {
		oauthError(c, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	idToken, err := i.Mint(TokenRequest{Tenant: g.token.Tenant, Subject: g.token.Subject, Audience: g.clientID, Nonce: g.nonce})
	if err != nil {
		oauthError(c, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	c.JSON(http.StatusOK, gin.H{
		"access_token": access,
		"id_token":     idToken,
		"token_type":   "Bearer",
		"expires_in":   int(DefaultTTL.Seconds()),
		"scope":        strings.Join(g.token.Scopes, " "),
	})
}

// pkceMatches checks an S256 code verifier against its challenge.
func pkceMatches(verifier, challenge string) bool {
	sum := sha256.Sum256([]byte(verifier))
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	return verifier != "" && subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}

func randomCode() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
