package auth

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/gin-gonic/gin"
)

// Well-known scope, role and header names.
const (
	ScopeCrossTenant = "admin:cross-tenant"
	// ScopeCodec lets an operator use the codec server (/codec/encode and
	// /codec/decode): its tenant's Temporal payloads, a super-admin's every
	// tenant's (docs/operations.md, Codec server).
	ScopeCodec            = "admin:codec"
	RoleSuperAdmin        = "super-admin"
	HeaderEffectiveTenant = "X-Effective-Tenant-Id"
	HeaderEffectiveUser   = "X-Effective-User-Id"
)

// SlugPattern is what a tenant id and an application name look like: 2 to
// 63 lowercase letters, digits and hyphens, starting with a letter, not
// ending with a hyphen. It holds for the tenant_id claim,
// X-Effective-Tenant-Id, the tenants API, X-Application and policy scopes
// (docs/api.md).
var SlugPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,61}[a-z0-9]$`)

// MaxSubjectLength bounds a user id (sub, X-Effective-User-Id), in
// characters.
const MaxSubjectLength = 255

// tenantProblem says what is wrong with a tenant id, "" if nothing.
func tenantProblem(tenant string) string {
	if SlugPattern.MatchString(tenant) {
		return ""
	}
	return fmt.Sprintf("must be a tenant slug: 2 to 63 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen (pattern %s)", SlugPattern)
}

// subjectProblem says what is wrong with a user id, "" if nothing.
func subjectProblem(subject string) string {
	switch {
	case utf8.RuneCountInString(subject) > MaxSubjectLength:
		return fmt.Sprintf("must be at most %d characters", MaxSubjectLength)
	case !utf8.ValidString(subject) || strings.IndexFunc(subject, unicode.IsControl) >= 0:
		return "must not contain control characters or invalid UTF-8"
	case strings.HasPrefix(subject, jobs.KeyCaller("")):
		return `must not start with "key:", which marks the gateway's API keys`
	}
	return ""
}

// Caller is the verified identity of a request. Callers are read only:
// the requests of one token share its Caller's slices.
type Caller struct {
	Subject string   // sub: the user or client; key:<id> for a gateway API key
	Tenant  string   // tenant_id; empty for tenant-less (super-admin tooling) tokens
	Scopes  []string // scope
	Roles   []string // roles
	// Application is the application an API key is bound to: its jobs
	// are that application's ("" for none, and for tokens).
	Application string
	// KeyLimits are an API key's limits (none for tokens).
	KeyLimits store.KeyLimits
}

// HasScope reports whether the token grants scope.
func (c Caller) HasScope(scope string) bool { return slices.Contains(c.Scopes, scope) }

// IsSuperAdmin reports whether roles contains super-admin.
func (c Caller) IsSuperAdmin() bool { return slices.Contains(c.Roles, RoleSuperAdmin) }

// CrossTenant reports whether the token has the admin:cross-tenant scope.
func (c Caller) CrossTenant() bool { return c.HasScope(ScopeCrossTenant) }

type callerKey struct{}

// SetCaller stores caller on the gin context, as Middleware does (also for
// handler tests).
func SetCaller(c *gin.Context, caller Caller) { c.Set(callerKey{}, caller) }

// LookupCaller returns the caller stored by Middleware, if any.
func LookupCaller(c *gin.Context) (Caller, bool) {
	v, ok := c.Get(callerKey{})
	if !ok {
		return Caller{}, false
	}
	caller, ok := v.(Caller)
	return caller, ok
}

// CallerFrom returns the caller stored by Middleware. It panics when there is
// none: a handler that calls it must be routed behind Middleware.
func CallerFrom(c *gin.Context) Caller {
	caller, ok := LookupCaller(c)
	if !ok {
		panic("auth.CallerFrom: no caller on the context; route the handler behind auth.Middleware")
	}
	return caller
}

// RequireScope answers 403 INSUFFICIENT_SCOPE unless the token has scope.
func RequireScope(scope string) gin.HandlerFunc {
	return func(c *gin.Context) {
		caller, ok := LookupCaller(c)
		if !ok {
			abort(c, unauthenticated())
			return
		}
		if !caller.HasScope(scope) {
			abort(c, apierror.InsufficientScope(scope))
		}
	}
}

// RequireSuperAdmin answers 403 FORBIDDEN unless the caller is super-admin.
func RequireSuperAdmin() gin.HandlerFunc {
	return func(c *gin.Context) {
		caller, ok := LookupCaller(c)
		if !ok {
			abort(c, unauthenticated())
			return
		}
		if !caller.IsSuperAdmin() {
			abort(c, apierror.Forbidden("this operation needs the %s role", RoleSuperAdmin))
		}
	}
}

// EffectiveIdentity returns the tenant and user the request acts as: the
// token's, or those of X-Effective-Tenant-Id / X-Effective-User-Id, which
// need admin:cross-tenant (else a 403 FORBIDDEN *apierror.Error) and must
// be a tenant slug and a valid user id (else a 422 VALIDATION_ERROR naming
// the header). Empty header values count as absent.
func EffectiveIdentity(c *gin.Context) (tenant, user string, err error) {
	caller, ok := LookupCaller(c)
	if !ok {
		return "", "", unauthenticated()
	}
	tenant, user = caller.Tenant, caller.Subject
	effTenant := strings.TrimSpace(c.GetHeader(HeaderEffectiveTenant))
	effUser := strings.TrimSpace(c.GetHeader(HeaderEffectiveUser))
	if effTenant == "" && effUser == "" {
		return tenant, user, nil
	}
	if !caller.CrossTenant() {
		header := HeaderEffectiveTenant
		if effTenant == "" {
			header = HeaderEffectiveUser
		}
		return "", "", apierror.Forbidden("%s needs the %s scope", header, ScopeCrossTenant)
	}
	if effTenant != "" {
		if problem := tenantProblem(effTenant); problem != "" {
			return "", "", apierror.Validation("header "+HeaderEffectiveTenant, "%s", problem)
		}
		tenant = effTenant
	}
	if effUser != "" {
		if problem := subjectProblem(effUser); problem != "" {
			return "", "", apierror.Validation("header "+HeaderEffectiveUser, "%s", problem)
		}
		user = effUser
	}
	return tenant, user, nil
}

// unauthenticated is the error of a route reached without Middleware.
func unauthenticated() *apierror.Error {
	return apierror.Unauthorized("missing bearer token")
}

// abort hands err to the API's error renderer and stops the chain.
func abort(c *gin.Context, err *apierror.Error) {
	_ = c.Error(err)
	c.Abort()
}
