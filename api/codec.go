package api

import (
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/auth"
)

// CodecPath prefixes the codec server's routes, CodecPath+"/encode" and
// CodecPath+"/decode" (docs/operations.md, Codec server).
const CodecPath = "/codec"

// CodecMaxBodyBytes caps a codec request's body: the handler reads it
// whole.
const CodecMaxBodyBytes = 4 << 20

// codecCORSHeaders are the request headers a browser may send to the codec
// routes: the Temporal UI's.
const codecCORSHeaders = "Authorization, Content-Type, X-Namespace, X-Payload-Scope"

// codecServer serves Temporal's remote codec protocol to operators (the
// Temporal UI and CLI) behind a bearer token with admin:codec, answering
// CORS for the origins allowed.
type codecServer struct {
	handler  http.Handler
	verifier *auth.Verifier
	// origins may call cross-origin; open may call without a token from a
	// loopback peer (gateway dev's embedded UI, which has no login).
	origins, open []string
}

// routes registers the codec routes; none without a handler, so they
// answer 404.
func (s codecServer) routes(r gin.IRouter) {
	if s.handler == nil {
		return
	}
	g := r.Group(CodecPath, s.cors)
	serve := gin.WrapH(s.handler)
	for _, p := range []string{"/encode", "/decode"} {
		g.OPTIONS(p, preflight)
		g.POST(p, s.authorize, serve)
	}
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

// authorize requires a token with admin:codec, except from an open origin
// on a loopback peer without an Authorization header.
func (s codecServer) authorize(c *gin.Context) {
	if c.GetHeader("Authorization") == "" && s.openRequest(c.Request) {
		return
	}
	auth.Middleware(s.verifier)(c)
	if c.IsAborted() {
		return
	}
	auth.RequireScope(auth.ScopeCodec)(c)
}

// openRequest reports whether r comes from an open origin and a loopback
// peer (the connection's, never a forwarded address).
func (s codecServer) openRequest(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || !slices.Contains(s.open, origin) {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	addr, err := netip.ParseAddr(strings.TrimPrefix(host, "::ffff:"))
	return err == nil && addr.Unmap().IsLoopback()
}
