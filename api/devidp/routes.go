package devidp

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"
	jose "github.com/go-jose/go-jose/v4"
)

// Routes registers the discovery document, JWKS and token endpoint under
// Path on r, which must not require authentication.
func (i *Issuer) Routes(r gin.IRouter) {
	r.GET(Path+"/.well-known/openid-configuration", i.discovery)
	r.GET(Path+"/jwks", i.jwks)
	r.POST(Path+"/token", i.token)
	r.GET(Path+"/authorize", i.authorize)
	r.POST(Path+"/authorize", i.approve)
}

func (i *Issuer) discovery(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{
		"issuer":                                i.url,
		"jwks_uri":                              i.url + "/jwks",
		"token_endpoint":                        i.url + "/token",
		"authorization_endpoint":                i.url + "/authorize",
		"grant_types_supported":                 []string{"client_credentials", "authorization_code"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post", "none"},
		"response_types_supported":              []string{"code", "token"},
		"code_challenge_methods_supported":      []string{"S256"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{string(jose.RS256)},
		"claims_supported":                      []string{"iss", "sub", "aud", "iat", "nbf", "exp", "jti", "tenant_id", "scope", "roles"},
	})
}

func (i *Issuer) jwks(c *gin.Context) {
	c.JSON(http.StatusOK, i.PublicKeys())
}

// token is the OAuth 2.0 client credentials grant (RFC 6749 section 4.4).
// Dev only: any client is accepted and client_secret is ignored; client_id
// becomes the subject. Extensions: tenant_id, roles (space-separated) and
// audience.
func (i *Issuer) token(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	c.Header("Pragma", "no-cache")
	if err := c.Request.ParseForm(); err != nil {
		oauthError(c, http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	form := c.Request.PostForm
	grant := form.Get("grant_type")
	switch grant {
	case "authorization_code", "client_credentials":
	case "":
		oauthError(c, http.StatusBadRequest, "invalid_request", "grant_type is required")
		return
	default:
		oauthError(c, http.StatusBadRequest, "unsupported_grant_type", "only grant_type client_credentials and authorization_code are supported")
		return
	}

	clientID := form.Get("client_id")
	basicID, basic, ok := basicClientID(c.GetHeader("Authorization"))
	if basic && !ok {
		c.Header("WWW-Authenticate", `Basic realm="dev-oidc"`)
		oauthError(c, http.StatusUnauthorized, "invalid_client", "malformed HTTP Basic credentials")
		return
	}
	if basic {
		if clientID != "" && clientID != basicID {
			oauthError(c, http.StatusBadRequest, "invalid_request", "client_id in the body differs from the Basic credentials")
			return
		}
		clientID = basicID
	}
	if clientID == "" {
		c.Header("WWW-Authenticate", `Basic realm="dev-oidc"`)
		oauthError(c, http.StatusUnauthorized, "invalid_client", "send client_id in the body or as HTTP Basic credentials")
		return
	}
	if grant == "authorization_code" {
		i.exchange(c, clientID, form)
		return
	}

	scopes := strings.Fields(form.Get("scope"))
	token, err := i.Mint(TokenRequest{
		Tenant:   form.Get("tenant_id"),
		Subject:  clientID,
		Scopes:   scopes,
		Roles:    strings.Fields(form.Get("roles")),
		Audience: form.Get("audience"),
	})
	if err != nil {
		oauthError(c, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	c.JSON(http.StatusOK, gin.H{
		"access_token": token,
		"token_type":   "Bearer",
		"expires_in":   int(DefaultTTL.Seconds()),
		"scope":        strings.Join(scopes, " "),
	})
}

// basicClientID extracts the client id of HTTP Basic client authentication,
// whose parts are form-encoded (RFC 6749 section 2.3.1); basic reports
// whether the header uses the Basic scheme at all.
func basicClientID(header string) (id string, basic, ok bool) {
	scheme, creds, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "Basic") {
		return "", false, false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(creds))
	if err != nil {
		return "", true, false
	}
	user, _, _ := strings.Cut(string(raw), ":")
	id, err = url.QueryUnescape(user)
	return id, true, err == nil && id != ""
}

func oauthError(c *gin.Context, status int, code, description string) {
	c.AbortWithStatusJSON(status, gin.H{"error": code, "error_description": description})
}
