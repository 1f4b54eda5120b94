package auth

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/app/apikeys"
	"github.com/gin-gonic/gin"
)

// KeyAuthenticator checks the gateway's own API keys (apikeys.Service).
type KeyAuthenticator interface {
	Authenticate(ctx context.Context, raw string) (apikeys.Identity, error)
}

// Middleware requires a valid bearer token, a JWT of v's issuer or an API
// key of keys (docs/api.md, API keys), and stores its Caller on the gin
// context. A missing or rejected token aborts with 401 UNAUTHORIZED; an
// issuer that cannot be discovered, or whose keys cannot be fetched, or a
// store that cannot be read, aborts with 503 SERVICE_UNAVAILABLE and
// Retry-After, since the token may well be fine. keys may be nil: API
// keys are then refused.
func Middleware(v *Verifier, keys KeyAuthenticator) gin.HandlerFunc {
	return func(c *gin.Context) {
		raw, problem := bearerToken(c.GetHeader("Authorization"))
		if problem != "" {
			abort(c, apierror.Unauthorized(problem))
			return
		}
		if apikeys.LooksLikeKey(raw) {
			authenticateKey(c, keys, raw)
			return
		}
		caller, err := v.Verify(c.Request.Context(), raw)
		var rejected *TokenError
		switch {
		case errors.As(err, &rejected):
			abort(c, apierror.Unauthorized(rejected.Reason))
			return
		case err != nil:
			abort(c, apierror.New(http.StatusServiceUnavailable, apierror.CodeServiceUnavailable,
				"the identity provider is unavailable, so the token cannot be verified; try again shortly").
				WithHeader("Retry-After", strconv.Itoa(retryAfterSeconds(err))))
			return
		}
		SetCaller(c, caller)
	}
}

// authenticateKey stores the caller of API key raw, or aborts.
func authenticateKey(c *gin.Context, keys KeyAuthenticator, raw string) {
	if keys == nil {
		abort(c, apierror.Unauthorized("this server does not accept API keys"))
		return
	}
	id, err := keys.Authenticate(c.Request.Context(), raw)
	var invalid *apikeys.InvalidError
	var limited *apikeys.LimitError
	switch {
	case errors.As(err, &invalid):
		abort(c, apierror.Unauthorized(invalid.Reason))
		return
	case errors.As(err, &limited):
		abort(c, apierror.New(http.StatusTooManyRequests, apierror.CodeRateLimited, "%s", limited.Error()).
			WithHeader("Retry-After", strconv.Itoa(int(limited.RetryAfter/time.Second))))
		return
	case err != nil:
		abort(c, apierror.New(http.StatusServiceUnavailable, apierror.CodeServiceUnavailable,
			"the API key cannot be checked just now; try again shortly").WithHeader("Retry-After", "1"))
		return
	}
	caller := Caller{Subject: id.Subject(), Tenant: id.Tenant, Scopes: id.Scopes, KeyLimits: id.Limits}
	if id.Application != nil {
		caller.Application = *id.Application
	}
	SetCaller(c, caller)
}

// retryAfterSeconds is when a request refused for err may be retried: when
// the key set may be fetched again, else in 5 s (discovery is retried by
// the next request).
func retryAfterSeconds(err error) int {
	var unavailable *keysUnavailableError
	if errors.As(err, &unavailable) {
		return max(1, int((unavailable.retryAfter+time.Second-1)/time.Second))
	}
	return 5
}

// bearerToken extracts the token of an "Authorization: Bearer <token>" header
// (scheme case-insensitive, RFC 7235); problem says what is wrong otherwise.
func bearerToken(header string) (token, problem string) {
	header = strings.TrimSpace(header)
	if header == "" {
		return "", `missing bearer token: send "Authorization: Bearer <token>"`
	}
	scheme, token, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", "the Authorization header must use the Bearer scheme"
	}
	token = strings.TrimSpace(token)
	switch {
	case token == "":
		return "", "the Authorization header has no token after Bearer"
	case strings.ContainsAny(token, " \t"):
		return "", "the bearer token must be a single JWT or API key"
	}
	return token, ""
}
