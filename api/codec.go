package api

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
)

// CodecPath prefixes the codec server's routes, CodecPath+"/encode" and
// CodecPath+"/decode" (docs/operations.md, Codec server).
const CodecPath = "/codec"

// CodecDevPath+"/<secret>" prefixes the codec routes gateway dev's
// embedded UI calls without a token (Config.CodecDevSecret).
const CodecDevPath = CodecPath + "/dev"

// CodecMaxBodyBytes caps a codec request's body: the handler reads it
// whole.
const CodecMaxBodyBytes = 4 << 20

// codeInvalidPayloadScope: a codec request's scope is neither a tenant
// slug nor _system (docs/api.md, Errors).
const codeInvalidPayloadScope = "INVALID_PAYLOAD_SCOPE"

// codecCORSHeaders are the request headers a browser may send to the codec
// routes: the Temporal UI's.
const codecCORSHeaders = "Authorization, Content-Type, X-Namespace, X-Payload-Scope"

// PayloadCodecs are the codecs of the codec server: a payloadcodec
// Encryptor's ReadOnly view, which makes no scope's secret.
type PayloadCodecs interface {
	// Codec encodes in scope.
	Codec(scope string) converter.PayloadCodec
	// Decoder decodes each payload in the scope it names.
	Decoder() converter.PayloadCodec
}

// codecServer serves Temporal's remote codec protocol to operators (the
// Temporal UI and CLI) behind a bearer token with admin:codec, answering
// CORS for the origins allowed. A token with a tenant reaches its
// tenant's scope only; a super-admin's reaches every scope.
type codecServer struct {
	codecs   PayloadCodecs
	verifier *auth.Verifier
	keys     auth.KeyAuthenticator
	// origins may call cross-origin.
	origins []string
	// devSecret, when set, opens CodecDevPath/<devSecret> to loopback
	// peers without a token (gateway dev's embedded UI, which has no
	// login).
	devSecret string
}

// codecAnyScope marks a request that may reach every scope without a
// token: gateway dev's embedded UI.
type codecAnyScope struct{}

// routes registers the codec routes; none without codecs, so they answer
// 404.
func (s codecServer) routes(r gin.IRouter) {
	if s.codecs == nil {
		return
	}
	g := r.Group(CodecPath, s.cors)
	g.OPTIONS("/encode", preflight)
	g.OPTIONS("/decode", preflight)
	g.POST("/encode", s.authenticate, handle(s.encode))
	g.POST("/decode", s.authenticate, handle(s.decode))
	if s.devSecret == "" {
		return
	}
	dev := r.Group(CodecDevPath+"/:secret", s.cors, s.checkDevSecret)
	dev.OPTIONS("/encode", preflight)
	dev.OPTIONS("/decode", preflight)
	dev.POST("/encode", s.authenticateDev, handle(s.encode))
	dev.POST("/decode", s.authenticateDev, handle(s.decode))
}

// cors allows the configured origins to read the answer.
func (s codecServer) cors(c *gin.Context) {
	h := c.Writer.Header()
	h.Add("Vary", "Origin")
	origin := c.GetHeader("Origin")
	if origin == "" || !slices.Contains(s.origins, origin) {
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Access-Control-Allow-Headers", codecCORSHeaders)
	h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	h.Set("Access-Control-Max-Age", "600")
}

// preflight answers a CORS preflight; cors has set the headers if the
// origin is allowed.
func preflight(c *gin.Context) { c.Status(http.StatusNoContent) }

// authenticate requires a token with admin:codec.
func (s codecServer) authenticate(c *gin.Context) {
	auth.Middleware(s.verifier, s.keys)(c)
	if c.IsAborted() {
		return
	}
	auth.RequireScope(auth.ScopeCodec)(c)
}

// checkDevSecret answers 404 unless the path names the dev secret, then
// takes the secret out of the path the request is logged and traced with.
func (s codecServer) checkDevSecret(c *gin.Context) {
	if subtle.ConstantTimeCompare([]byte(c.Param("secret")), []byte(s.devSecret)) != 1 {
		abort(c, notFoundRoute(c))
		return
	}
	u := *c.Request.URL
	u.Path, u.RawPath = strings.Replace(u.Path, s.devSecret, "…", 1), ""
	c.Request.URL = &u
}

// notDevCodec leaves gateway dev's codec requests untraced: a span
// records the raw path, which holds the dev secret, before
// checkDevSecret takes it out (docs/operations.md, Codec server).
func notDevCodec(c *gin.Context) bool {
	return !strings.HasPrefix(c.Request.URL.Path, CodecDevPath+"/")
}

// authenticateDev lets a loopback peer without an Authorization header
// reach every scope; a token, or another peer, is authenticated as on
// the other routes.
func (s codecServer) authenticateDev(c *gin.Context) {
	if c.GetHeader("Authorization") == "" && loopbackPeer(c.Request) {
		c.Set(codecAnyScope{}, true)
		return
	}
	s.authenticate(c)
}

// loopbackPeer reports whether r's connection comes from a loopback
// address (the connection's, never a forwarded one).
func loopbackPeer(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.Unmap().IsLoopback()
}

// encode encrypts the body's payloads in the scope ScopeHeader names.
func (s codecServer) encode(c *gin.Context) error {
	scope := c.GetHeader(payloadcodec.ScopeHeader)
	if err := checkPayloadScope(scope, "header "+payloadcodec.ScopeHeader); err != nil {
		return err
	}
	if err := mayReachScope(c, scope); err != nil {
		return err
	}
	payloads, err := readPayloads(c)
	if err != nil {
		return err
	}
	out, err := s.codecs.Codec(scope).Encode(payloads)
	if errors.Is(err, payloadcodec.ErrScopeShredded) {
		return apierror.Validation("header "+payloadcodec.ScopeHeader,
			"scope %q has no payload secret, being shredded with its tenant or never used; encode in the scope of a tenant that has had jobs", scope)
	}
	if err != nil {
		return codecError(err)
	}
	return writePayloads(c, out)
}

// decode decrypts the body's payloads, each in the scope it names; one
// scope the caller may not reach refuses the whole request.
func (s codecServer) decode(c *gin.Context) error {
	payloads, err := readPayloads(c)
	if err != nil {
		return err
	}
	for i, p := range payloads {
		scope, encrypted := payloadcodec.PayloadScope(p)
		if !encrypted {
			continue
		}
		if err := checkPayloadScope(scope, fmt.Sprintf("/payloads/%d metadata %s", i, payloadcodec.MetadataScope)); err != nil {
			return err
		}
		if err := mayReachScope(c, scope); err != nil {
			return err
		}
	}
	out, err := s.codecs.Decoder().Decode(payloads)
	if err != nil {
		return codecError(err)
	}
	return writePayloads(c, out)
}

// checkPayloadScope refuses a scope that is neither a tenant slug nor
// payloadcodec.SystemScope, before any secret is read; where names it.
func checkPayloadScope(scope, where string) error {
	switch {
	case scope == "":
		return apierror.New(http.StatusBadRequest, codeInvalidPayloadScope, "%s: is required: the payload scope, a tenant slug or %s", where, payloadcodec.SystemScope)
	case scope != payloadcodec.SystemScope && !auth.SlugPattern.MatchString(scope):
		return apierror.New(http.StatusBadRequest, codeInvalidPayloadScope, "%s: must be a tenant slug (pattern %s) or %s", where, auth.SlugPattern, payloadcodec.SystemScope)
	}
	return nil
}

// mayReachScope refuses a scope that is not the token's tenant, unless
// the caller is a super-admin or gateway dev's embedded UI.
func mayReachScope(c *gin.Context, scope string) error {
	if c.GetBool(codecAnyScope{}) {
		return nil
	}
	caller := auth.CallerFrom(c)
	if caller.IsSuperAdmin() || (caller.Tenant != "" && scope == caller.Tenant) {
		return nil
	}
	reaches := "no scope, having no tenant"
	if caller.Tenant != "" {
		reaches = fmt.Sprintf("only its tenant's scope, %q", caller.Tenant)
	}
	return apierror.Forbidden("payloads of scope %q: the token reaches %s; other tenants' scopes and %s need the %s role",
		scope, reaches, payloadcodec.SystemScope, auth.RoleSuperAdmin)
}

// readPayloads reads the body, {"payloads":[...]} in protojson form.
func readPayloads(c *gin.Context) ([]*commonpb.Payload, error) {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return nil, err
	}
	var in commonpb.Payloads
	if err := protojson.Unmarshal(body, &in); err != nil {
		return nil, apierror.New(http.StatusBadRequest, apierror.CodeMalformedJSON, `the request body is not {"payloads": [...]} in Temporal's protojson form`)
	}
	return in.GetPayloads(), nil
}

// writePayloads answers payloads in protojson form.
func writePayloads(c *gin.Context, payloads []*commonpb.Payload) error {
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: payloads})
	if err != nil {
		return err
	}
	c.Data(http.StatusOK, "application/json", body)
	return nil
}

// codecError classifies a codec failure: a payload that cannot be
// decrypted is a 409, as for a webhook resend, naming key ids and scopes (never key material);
// anything else, such as the store out of reach, goes to renderErrors,
// which logs it.
func codecError(err error) error {
	switch {
	case errors.Is(err, payloadcodec.ErrScopeShredded):
		return apierror.New(http.StatusConflict, apierror.CodePayloadUndecryptable, "%v: the scope has no payload secret, being shredded with its tenant or never used", err)
	case errors.Is(err, payloadcodec.ErrUnknownKey), errors.Is(err, payloadcodec.ErrDecrypt), errors.Is(err, payloadcodec.ErrNoScope):
		return apierror.New(http.StatusConflict, apierror.CodePayloadUndecryptable, "%v", err)
	case errors.Is(err, payloadcodec.ErrSecretUnavailable):
		// The store out of reach: as for any 503, without its words.
		return apierror.New(http.StatusServiceUnavailable, apierror.CodeServiceUnavailable,
			"the payload secrets cannot be read now; retry after Retry-After seconds").
			WithHeader("Retry-After", strconv.Itoa(unavailableRetryAfter))
	}
	return err
}
