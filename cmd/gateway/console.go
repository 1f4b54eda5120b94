package main

import (
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/console"
	"github.com/ai-job-gateway/gateway/app/apikeys"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/store"
)

// consolePurpose derives the key that seals the credentials of console
// sessions from the webhook signing key, as API key tags are
// (docs/console.md, Sessions).
const consolePurpose = "ai-job-gateway console session v1"

// consoleMount is the console, served at /console/ on the API's own
// router (docs/console.md): its pages call that router in-process.
type consoleMount struct {
	console *console.Console
	// api is the API's router, set once api.New built it, before the
	// server serves.
	api http.Handler
}

// newConsole builds the console over st's sessions and keys' tenants.
func newConsole(st *store.Store, keys *apikeys.Service, signer *webhooksign.Signer, logger *slog.Logger) (*consoleMount, error) {
	key, err := signer.DeriveKey(consolePurpose)
	if err != nil {
		return nil, err
	}
	m := &consoleMount{}
	m.console, err = console.New(console.Config{API: http.HandlerFunc(m.serveAPI), Sessions: st.APIKeys, Keys: keys,
		SealKey: key, Logger: logger.With("component", "console")})
	return m, err
}

func (m *consoleMount) serveAPI(w http.ResponseWriter, r *http.Request) { m.api.ServeHTTP(w, r) }

// routes registers the console's paths (an api.Config Routes entry).
func (m *consoleMount) routes(r gin.IRouter) {
	h := gin.WrapH(m.console)
	r.GET(console.Path+"*path", h)
	r.POST(console.Path+"*path", h)
}
