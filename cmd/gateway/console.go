package main

import (
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api"
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

// consoleOIDC is the console's sign-in through issuerURL: with the
// configured client, or, on dev's own issuer, the client dev's issuer
// takes (any); nil without a client (API keys only).
func consoleOIDC(cfg config, issuerURL string, devIssuer bool) *console.OIDC {
	clientID := cfg.ConsoleOIDCClientID
	if clientID == "" && devIssuer {
		clientID = "gateway-console"
	}
	if clientID == "" || issuerURL == "" {
		return nil
	}
	return &console.OIDC{IssuerURL: issuerURL, ClientID: clientID, ClientSecret: cfg.ConsoleOIDCClientSecret}
}

// consoleOption sets an optional field of the console's Config.
type consoleOption func(*console.Config)

// newAPI builds the API of apiCfg with the console at /console/ on its
// router: the console over st's sessions and the API's keys, with sign-in
// through oidc when not nil.
func newAPI(apiCfg api.Config, st *store.Store, signer *webhooksign.Signer, oidc *console.OIDC, logger *slog.Logger, opts ...consoleOption) (*api.Server, error) {
	con, err := newConsole(st, apiCfg.APIKeys, signer, oidc, logger, opts...)
	if err != nil {
		return nil, err
	}
	apiCfg.Routes = append(apiCfg.Routes, con.routes)
	srv, err := api.New(apiCfg)
	if err != nil {
		return nil, err
	}
	con.api = srv.Handler()
	return srv, nil
}

// newConsole builds the console over st's sessions and keys' tenants,
// with sign-in through oidc when not nil.
func newConsole(st *store.Store, keys *apikeys.Service, signer *webhooksign.Signer, oidc *console.OIDC, logger *slog.Logger, opts ...consoleOption) (*consoleMount, error) {
	key, err := signer.DeriveKey(consolePurpose)
	if err != nil {
		return nil, err
	}
	m := &consoleMount{}
	cfg := console.Config{API: http.HandlerFunc(m.serveAPI), Sessions: st.APIKeys, Keys: keys, OIDC: oidc,
		SealKey: key, Logger: logger.With("component", "console")}
	for _, opt := range opts {
		opt(&cfg)
	}
	m.console, err = console.New(cfg)
	return m, err
}

func (m *consoleMount) serveAPI(w http.ResponseWriter, r *http.Request) { m.api.ServeHTTP(w, r) }

// routes registers the console's paths (an api.Config Routes entry).
func (m *consoleMount) routes(r gin.IRouter) {
	h := gin.WrapH(m.console)
	r.GET(console.Path+"*path", h)
	r.POST(console.Path+"*path", h)
}
