package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/app/apikeys"
	"github.com/ai-job-gateway/gateway/store"
)

// Scopes of the API keys routes.
const (
	scopeKeysWrite = "keys:write"
	scopeKeysRead  = "keys:read"
)

// maxKeyNameLength bounds an API key's name, in characters.
const maxKeyNameLength = 200

// apiKeysHandler serves the keys the gateway issues (docs/api.md, API
// keys).
type apiKeysHandler struct {
	keys *apikeys.Service
}

func (h apiKeysHandler) routes(v1 *gin.RouterGroup) {
	write, read := auth.RequireScope(scopeKeysWrite), auth.RequireScope(scopeKeysRead)
	v1.POST("/api-keys", write, handle(h.create))
	v1.GET("/api-keys", read, handle(h.list))
	v1.GET("/api-keys/:id", read, handle(h.get))
	v1.DELETE("/api-keys/:id", write, handle(h.revoke))
	v1.POST("/api-keys/:id/rotate", write, handle(h.rotate))
}

type apiKeyResource struct {
	ID         string             `json:"id"`
	Type       string             `json:"type"`
	Attributes apikeys.Attributes `json:"attributes"`
}

// apiKeyView shows k at now; secret is "" but in the answers of create
// and rotate.
func apiKeyView(k store.APIKey, secret string, now time.Time) apiKeyResource {
	return apiKeyResource{ID: k.ID, Type: "api-key", Attributes: apikeys.View(k, secret, now)}
}

// create handles POST /v1/api-keys.
func (h apiKeysHandler) create(c *gin.Context) error {
	env, err := readEnvelope(c, envelopeSpec{Type: "api-key", Members: []string{"type", "attributes"},
		Attributes: []string{"name", "scopes", "application", "expires_at", "tenant", "limits"}, AttributesRequired: true})
	if err != nil {
		return err
	}
	k, err := parseNewKey(env, time.Now())
	if err != nil {
		return err
	}
	by := keyCreator(c)
	if k.Tenant == "" && by.Tenant == "" {
		return apierror.Validation(ptrAttributes+"/tenant", "is required: the token carries no tenant_id claim")
	}
	issued, err := h.keys.Issue(c.Request.Context(), by, k)
	if err != nil {
		return keyRefusal(err)
	}
	c.Header("Location", "/v1/api-keys/"+issued.Key.ID)
	c.JSON(http.StatusCreated, gin.H{"data": apiKeyView(issued.Key, issued.Secret, time.Now())})
	return nil
}

// parseNewKey reads a create's attributes, naming the member at fault.
func parseNewKey(env *envelope, now time.Time) (apikeys.NewKey, error) {
	var k apikeys.NewKey
	name, given, err := stringMember(env.Attributes, "name", ptrAttributes)
	switch {
	case err != nil:
		return k, err
	case !given || strings.TrimSpace(name) == "":
		return k, apierror.Validation(ptrAttributes+"/name", "is required")
	case utf8.RuneCountInString(name) > maxKeyNameLength:
		return k, apierror.Validation(ptrAttributes+"/name", "must be at most %d characters", maxKeyNameLength)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return k, apierror.Validation(ptrAttributes+"/name", "must not contain control characters")
	}
	k.Name = name
	raw, ok := env.Attributes["scopes"]
	if !ok {
		return k, apierror.Validation(ptrAttributes+"/scopes", "is required: a non-empty array of scopes")
	}
	if json.Unmarshal(raw, &k.Scopes) != nil {
		return k, apierror.Validation(ptrAttributes+"/scopes", "must be an array of scopes (strings)")
	}
	if len(k.Scopes) == 0 {
		return k, apierror.Validation(ptrAttributes+"/scopes", "must hold at least one scope")
	}
	for i, s := range k.Scopes {
		if s == "" || strings.ContainsFunc(s, unicode.IsSpace) {
			return k, apierror.Validation(fmt.Sprintf("%s/scopes/%d", ptrAttributes, i), "must be a scope, such as transcriptions:write")
		}
		if slices.Index(k.Scopes, s) < i {
			return k, apierror.Validation(fmt.Sprintf("%s/scopes/%d", ptrAttributes, i), "repeats %q", s)
		}
	}
	if app, given, err := nullableString(env, "application"); err != nil {
		return k, err
	} else if given {
		if !auth.SlugPattern.MatchString(app) {
			return k, apierror.Validation(ptrAttributes+"/application", "must be an application name: 2 to 63 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen")
		}
		k.Application = &app
	}
	if at, given, err := nullableString(env, "expires_at"); err != nil {
		return k, err
	} else if given {
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			return k, apierror.Validation(ptrAttributes+"/expires_at", "must be an RFC 3339 time, such as 2027-01-31T00:00:00Z")
		}
		if !t.After(now) {
			return k, apierror.Validation(ptrAttributes+"/expires_at", "must be in the future")
		}
		t = t.UTC()
		k.ExpiresAt = &t
	}
	tenant, given, err := nullableString(env, "tenant")
	if err != nil {
		return k, err
	}
	if given && !auth.SlugPattern.MatchString(tenant) {
		return k, apierror.Validation(ptrAttributes+"/tenant", "must be a tenant slug: 2 to 63 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen")
	}
	k.Tenant = tenant
	if raw, ok := env.Attributes["limits"]; ok && string(raw) != "null" {
		limits, err := object(raw, ptrAttributes+"/limits")
		if err != nil {
			return k, err
		}
		if err := onlyKeys(limits, ptrAttributes+"/limits", "requests_per_minute", "max_in_flight", "tokens_per_minute"); err != nil {
			return k, err
		}
		if raw, ok := limits["tokens_per_minute"]; ok {
			if json.Unmarshal(raw, &k.Limits.TokensPerMinute) != nil || k.Limits.TokensPerMinute < 1 || k.Limits.TokensPerMinute > maxTokensPerMinute {
				return k, apierror.Validation(ptrAttributes+"/limits/tokens_per_minute", "must be a whole number from 1 to %d", maxTokensPerMinute)
			}
		}
		if raw, ok := limits["max_in_flight"]; ok {
			if json.Unmarshal(raw, &k.Limits.MaxInFlight) != nil || k.Limits.MaxInFlight < 1 || k.Limits.MaxInFlight > maxInFlight {
				return k, apierror.Validation(ptrAttributes+"/limits/max_in_flight", "must be a whole number from 1 to %d", maxInFlight)
			}
		}
		if raw, ok := limits["requests_per_minute"]; ok {
			if json.Unmarshal(raw, &k.Limits.RequestsPerMinute) != nil || k.Limits.RequestsPerMinute < 1 || k.Limits.RequestsPerMinute > maxRequestsPerMinute {
				return k, apierror.Validation(ptrAttributes+"/limits/requests_per_minute", "must be a whole number from 1 to %d", maxRequestsPerMinute)
			}
		}
	}
	return k, nil
}

// maxRequestsPerMinute bounds a key's requests_per_minute.
const maxRequestsPerMinute = 1_000_000

// maxTokensPerMinute bounds a key's tokens_per_minute (within a budget's
// 1e-9 units in an int64).
const maxTokensPerMinute = 1_000_000_000

// keyCreator is the caller as apikeys sees it.
func keyCreator(c *gin.Context) apikeys.Creator {
	caller := auth.CallerFrom(c)
	return apikeys.Creator{Subject: caller.Subject, Tenant: caller.Tenant, Scopes: caller.Scopes, SuperAdmin: caller.IsSuperAdmin()}
}

// keyRefusal is apikeys' refusal of a caller as the API's 403.
func keyRefusal(err error) error {
	var scope *apikeys.ScopeError
	var reserved *apikeys.ReservedScopeError
	if errors.As(err, &scope) || errors.As(err, &reserved) || errors.Is(err, apikeys.ErrOtherTenant) {
		return apierror.Forbidden("%s", err.Error())
	}
	return err
}

// nullableString reads an optional string attribute; null counts as
// absent.
func nullableString(env *envelope, key string) (string, bool, error) {
	if raw, ok := env.Attributes[key]; ok && string(raw) == "null" {
		return "", false, nil
	}
	return stringMember(env.Attributes, key, ptrAttributes)
}

// keysTenant is the tenant whose keys a request reads or changes: the
// caller's, or X-Effective-Tenant-Id's with admin:cross-tenant.
func keysTenant(c *gin.Context) (string, error) {
	tenant, _, err := auth.EffectiveIdentity(c)
	if err == nil && tenant == "" {
		err = apierror.Forbidden("the token carries no tenant_id claim; API keys belong to a tenant (send X-Effective-Tenant-Id)")
	}
	return tenant, err
}

// notFoundKey is the 404 of a key the tenant does not have.
func notFoundKey(err error, id string) error {
	if errors.Is(err, store.ErrNotFound) {
		return apierror.NotFound("no API key %q", id)
	}
	return err
}

// list handles GET /v1/api-keys.
func (h apiKeysHandler) list(c *gin.Context) error {
	tenant, err := keysTenant(c)
	if err != nil {
		return err
	}
	keys, err := h.keys.List(c.Request.Context(), tenant)
	if err != nil {
		return err
	}
	data := make([]apiKeyResource, 0, len(keys))
	for _, k := range keys {
		data = append(data, apiKeyView(k, "", time.Now()))
	}
	c.JSON(http.StatusOK, gin.H{"data": data})
	return nil
}

// get handles GET /v1/api-keys/:id.
func (h apiKeysHandler) get(c *gin.Context) error {
	tenant, err := keysTenant(c)
	if err != nil {
		return err
	}
	k, err := h.keys.Get(c.Request.Context(), tenant, c.Param("id"))
	if err != nil {
		return notFoundKey(err, c.Param("id"))
	}
	c.JSON(http.StatusOK, gin.H{"data": apiKeyView(*k, "", time.Now())})
	return nil
}

// revoke handles DELETE /v1/api-keys/:id.
func (h apiKeysHandler) revoke(c *gin.Context) error {
	tenant, err := keysTenant(c)
	if err != nil {
		return err
	}
	if err := h.keys.Revoke(c.Request.Context(), tenant, c.Param("id")); err != nil {
		return notFoundKey(err, c.Param("id"))
	}
	c.Status(http.StatusNoContent)
	return nil
}

// rotate handles POST /v1/api-keys/:id/rotate; the body, optional, names
// the previous secret's grace period.
func (h apiKeysHandler) rotate(c *gin.Context) error {
	tenant, err := keysTenant(c)
	if err != nil {
		return err
	}
	var grace time.Duration
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return err
	}
	if len(body) > 0 {
		env, err := parseEnvelope(body, envelopeSpec{Type: "api-key-rotation", Members: []string{"type", "attributes"},
			Attributes: []string{"grace_period_seconds"}})
		if err != nil {
			return err
		}
		if raw, ok := env.Attributes["grace_period_seconds"]; ok {
			var seconds int64
			if json.Unmarshal(raw, &seconds) != nil || seconds < 0 || seconds > int64(apikeys.MaxGrace/time.Second) {
				return apierror.Validation(ptrAttributes+"/grace_period_seconds", "must be a whole number of seconds from 0 to %d (24 hours)", int64(apikeys.MaxGrace/time.Second))
			}
			grace = time.Duration(seconds) * time.Second
		}
	}
	issued, err := h.keys.Rotate(c.Request.Context(), keyCreator(c), tenant, c.Param("id"), grace)
	if err != nil {
		return notFoundKey(keyRefusal(err), c.Param("id"))
	}
	c.JSON(http.StatusOK, gin.H{"data": apiKeyView(issued.Key, issued.Secret, time.Now())})
	return nil
}
