// Package console serves the gateway's console for people at /console/
// (docs/console.md): server-rendered pages that read and write through
// the gateway's own API, in-process, as the signed-in person, so that a
// person sees and does exactly what their credential's scopes allow.
//
// Each page is one file (its handler) and one template under templates/,
// rendered inside templates/layout.html.
package console

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/ai-job-gateway/gateway/app/apikeys"
	"github.com/ai-job-gateway/gateway/store"
)

// Path is where the console is served.
const Path = "/console/"

// Sessions keeps the console's sessions (store.APIKeyStore).
type Sessions interface {
	CreateConsoleSession(ctx context.Context, s *store.ConsoleSession) error
	ConsoleSession(ctx context.Context, id string, now time.Time) (*store.ConsoleSession, error)
	DeleteConsoleSession(ctx context.Context, id string) error
}

// Keys tells an API key's tenant, which a session is bound to
// (apikeys.Service).
type Keys interface {
	Authenticate(ctx context.Context, raw string) (apikeys.Identity, error)
}

// Config is what the console needs.
type Config struct {
	// API is the gateway's API router; every page reads and writes
	// through it.
	API http.Handler
	// Sessions keeps the sessions.
	Sessions Sessions
	// Keys tells a signed-in key's tenant.
	Keys Keys
	// SealKey (32 bytes) seals the credential each session holds
	// (AES-GCM).
	SealKey []byte
	// OIDC, when set, offers sign-in through the identity provider.
	OIDC *OIDC
	// TemporalUIURL, when set, is the Temporal UI's page of the
	// namespace's workflows (…/namespaces/{ns}/workflows); a job page
	// links to its workflow under it.
	TemporalUIURL string
	// Now is the clock; nil is time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Console serves the console.
type Console struct {
	cfg     Config
	seal    sealer
	oidc    oidcProvider
	pages   map[string]*template.Template
	handler http.Handler
}

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed assets
var assetFiles embed.FS

// New builds the console.
func New(cfg Config) (*Console, error) {
	if cfg.API == nil || cfg.Sessions == nil || cfg.Keys == nil {
		return nil, errors.New("console: Config.API, Sessions and Keys are required")
	}
	seal, err := newSealer(cfg.SealKey)
	if err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Console{cfg: cfg, seal: seal, pages: map[string]*template.Template{}}
	for _, name := range []string{"sign-in", "jobs", "job", "problem", "providers", "services", "tenants", "tenant", "audit", "failed",
		"usage", "budgets", "keys", "key-secret", "key-revoke", "batches"} {
		t, err := template.New("layout.html").Funcs(templateFuncs).ParseFS(templateFiles, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		c.pages[name] = t
	}
	assets, err := fs.Sub(assetFiles, "assets")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+Path+"assets/", assetHeaders(http.StripPrefix(Path+"assets/", http.FileServerFS(assets))))
	mux.HandleFunc("GET "+Path+"{$}", c.home)
	mux.HandleFunc("GET "+Path+"sign-in", c.signInForm)
	mux.HandleFunc("POST "+Path+"sign-in", c.signIn)
	mux.HandleFunc("POST "+Path+"sign-out", c.signedIn(c.signOut))
	mux.HandleFunc("GET "+Path+"sign-in/oidc", c.oidcStart)
	mux.HandleFunc("GET "+Path+"oidc/callback", c.oidcCallback)
	mux.HandleFunc("GET "+Path+"jobs", c.signedIn(c.jobs))
	mux.HandleFunc("GET "+Path+"jobs/{id}", c.signedIn(c.job))
	mux.HandleFunc("GET "+Path+"jobs/{id}/events", c.signedIn(c.jobEvents))
	if err := c.jobActionRoutes(mux); err != nil {
		return nil, err
	}
	// The tenant's pages (docs/console.md, Usage, Budgets, API keys, Batches).
	mux.HandleFunc("GET "+Path+"usage", c.signedIn(c.usage))
	mux.HandleFunc("GET "+Path+"usage.csv", c.signedIn(c.usageCSV))
	mux.HandleFunc("GET "+Path+"budgets", c.signedIn(c.budgets))
	mux.HandleFunc("GET "+Path+"keys", c.signedIn(c.keys))
	mux.HandleFunc("POST "+Path+"keys", c.signedIn(c.createKey))
	mux.HandleFunc("POST "+Path+"keys/{id}/revoke", c.signedIn(c.revokeKey))
	mux.HandleFunc("GET "+Path+"batches", c.signedIn(c.batch))
	mux.HandleFunc("GET "+Path+"batches/{id}/results", c.signedIn(c.batchResults))
	// Operators' pages (docs/console.md, Operators).
	mux.HandleFunc("GET "+Path+"providers", c.signedIn(c.providers))
	mux.HandleFunc("POST "+Path+"providers/{id}/services/{service}/breaker", c.signedIn(c.forceBreaker))
	mux.HandleFunc("GET "+Path+"services", c.signedIn(c.services))
	mux.HandleFunc("POST "+Path+"services/{id}", c.signedIn(c.setServiceStatus))
	mux.HandleFunc("GET "+Path+"tenants", c.signedIn(c.tenants))
	mux.HandleFunc("GET "+Path+"tenants/{slug}", c.signedIn(c.tenant))
	mux.HandleFunc("GET "+Path+"audit", c.signedIn(c.audit))
	mux.HandleFunc("GET "+Path+"failed", c.signedIn(c.failed))
	mux.HandleFunc("POST "+Path+"failed/retry", c.signedIn(c.retryFailed))
	c.handler = securityHeaders(mux)
	return c, nil
}

// ServeHTTP serves every path under Path.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.handler.ServeHTTP(w, r) }

// contentSecurityPolicy lets pages load only the console's own assets: no
// inline script or style, no frames, forms posting only to the gateway
// (docs/console.md, Security).
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// securityHeaders sets the headers every console response carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// assetHeaders lets browsers keep the stylesheet and script, checking
// each time that they did not change.
func assetHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}

// layout is what templates/layout.html renders around a page.
type layout struct {
	Title string
	// Tenant and CSRF are the session's; "" when signed out.
	Tenant string
	CSRF   string
	// Nav names the page's section in the navigation.
	Nav  string
	Page any
}

// render writes page's template with data, at status.
func (c *Console) render(w http.ResponseWriter, status int, page string, data layout) {
	var buf bytes.Buffer
	if err := c.pages[page].Execute(&buf, data); err != nil {
		c.cfg.Logger.Error("console: render", "page", page, "error", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// problem renders a page that says what went wrong.
func (c *Console) problem(w http.ResponseWriter, status int, s *session, title, message string) {
	data := layout{Title: title, Page: message}
	if s != nil {
		data.Tenant, data.CSRF = s.Tenant, s.CSRFToken
	}
	c.render(w, status, "problem", data)
}

// home sends a person to the jobs when signed in, else to sign in.
func (c *Console) home(w http.ResponseWriter, r *http.Request) {
	if _, err := c.session(r); err == nil {
		http.Redirect(w, r, Path+"jobs", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, Path+"sign-in", http.StatusSeeOther)
}
