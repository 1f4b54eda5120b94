package console_test

import (
	"context"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/mocks"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/api/console"
	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/app/apikeys"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/app/jobwatch"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
	"github.com/ai-job-gateway/gateway/workflows"
)

const testCatalog = `
providers:
  - id: alpha
    name: Alpha
    adapter: sandbox
    services:
      translations:
        features: [language_detection]
        limits: {requests_per_minute: 60, requests_per_day: 1000, max_file_size_mb: 5, max_duration_seconds: 60}
        pricing: {unit: per_character, amount: 0.00001, currency: USD}
  - id: beta
    name: Beta
    adapter: sandbox
    services:
      translations:
        features: [language_detection]
        limits: {requests_per_minute: 60, requests_per_day: 1000, max_file_size_mb: 5, max_duration_seconds: 60}
        pricing: {unit: per_character, amount: 0.00002, currency: USD}
`

// harness is the real API router with the console beside it, as
// cmd/gateway mounts them: same origin, /console/ to the console.
type harness struct {
	server *httptest.Server
	store  *store.Store
	keys   *apikeys.Service
	con    *console.Console
	// issuer is a dev identity provider on the same server, which the
	// API trusts and the console signs people in through.
	issuer *devidp.Issuer
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, mocks.NewClient(t))
}

// newHarnessWith is newHarness over temporal, a mock the caller has told
// what to answer.
func newHarnessWith(t *testing.T, temporal *mocks.Client) *harness {
	t.Helper()
	h := &harness{store: storetest.SQLite(t)}
	var handler http.Handler
	h.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(h.server.Close)
	var err error
	h.issuer, err = devidp.Open(t.TempDir(), "http://"+h.server.Listener.Addr().String()+devidp.Path)
	require.NoError(t, err)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	catalog, err := providers.ParseCatalog([]byte(testCatalog))
	require.NoError(t, err)
	starts := jobops.NewDispatcher(jobops.DispatcherConfig{Store: h.store.Jobs, Temporal: temporal, Generation: workflows.StampedGeneration, Logger: quiet})
	ops, err := jobops.New(jobops.Config{Generation: workflows.StampedGeneration, Jobs: h.store.Jobs, Tenants: h.store.Routing,
		Statuses: h.store.Routing, Policies: h.store.Routing, Rates: h.store.Routing, Batches: h.store.Batches, Catalog: catalog,
		Temporal: temporal, Starts: starts, Audit: h.store.Audit, Logger: quiet})
	require.NoError(t, err)
	h.keys = apikeys.New(h.store.APIKeys, h.store.Routing, apikeys.TagsOf([]byte("test tags")), nil, quiet)
	srv, err := api.New(api.Config{Store: h.store.Jobs, Batches: h.store.Batches, Jobs: ops, Catalog: catalog,
		Verifier: auth.NewVerifier(h.issuer.URL(), devidp.DefaultAudience, h.server.Client()), APIKeys: h.keys, Audit: h.store.Audit,
		Tenants: h.store.Routing, Statuses: h.store.Routing, Policies: h.store.Routing, Deliveries: h.store.Webhooks,
		Usage: h.store.Usage, Breakers: h.store.Breakers, Watcher: jobwatch.New(h.store.Jobs, 10*time.Millisecond, quiet), Events: h.store.Jobs,
		Routes: []func(gin.IRouter){h.issuer.Routes}, Logger: quiet})
	require.NoError(t, err)
	h.con, err = console.New(console.Config{API: srv.Handler(), Sessions: h.store.APIKeys, Keys: h.keys,
		SealKey: []byte("0123456789abcdef0123456789abcdef"), Logger: quiet,
		OIDC: &console.OIDC{IssuerURL: h.issuer.URL(), ClientID: "gateway-console", Client: h.server.Client()}})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(console.Path, h.con)
	mux.Handle("/", srv.Handler())
	handler = mux
	h.server.Start()
	return h
}

// key issues a key of tenant that reads and writes every service.
func (h *harness) key(t *testing.T, tenant string) (string, apikeys.Issued) {
	t.Helper()
	var scopes []string
	for _, s := range jobs.Services() {
		scopes = append(scopes, string(s.ID)+":read", string(s.ID)+":write")
	}
	issued, err := h.keys.Issue(context.Background(), apikeys.Creator{Subject: "tester", Tenant: tenant, Scopes: scopes},
		apikeys.NewKey{Name: "console", Scopes: scopes})
	require.NoError(t, err)
	return issued.Secret, issued
}

// seed stores a job of tenant.
func (h *harness) seed(t *testing.T, job jobs.Record) jobs.Record {
	t.Helper()
	if job.ID == "" {
		job.ID = uuid.Must(uuid.NewV7()).String()
	}
	if job.Service == "" {
		job.Service = jobs.Translations
	}
	if job.Status == "" {
		job.Status = jobs.StatusPending
	}
	if job.UserID == "" {
		job.UserID = "tester"
	}
	if job.Input == "" {
		job.Input = `{"type":"text","content":"Hello","target_language":"de"}`
	}
	if job.CreatedAt.IsZero() {
		job.CreatedAt = time.Now().UTC().Truncate(time.Millisecond)
	}
	job.Revision = 1
	require.NoError(t, h.store.Jobs.SaveJob(context.Background(), &job))
	return job
}

// browser is a person's browser: a cookie jar, redirects not followed.
type browser struct {
	t      *testing.T
	h      *harness
	client *http.Client
}

func (h *harness) browser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browser{t: t, h: h, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) get(path string) page {
	b.t.Helper()
	resp, err := b.client.Get(b.h.server.URL + path)
	require.NoError(b.t, err)
	return read(b.t, resp)
}

func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	resp, err := b.client.PostForm(b.h.server.URL+path, form)
	require.NoError(b.t, err)
	return read(b.t, resp)
}

func read(t *testing.T, resp *http.Response) page {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	requireSecurityHeaders(t, resp.Header)
	return page{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

// requireSecurityHeaders checks what every console response carries
// (docs/console.md, Security).
func requireSecurityHeaders(t *testing.T, h http.Header) {
	t.Helper()
	require.Equal(t, "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
		h.Get("Content-Security-Policy"))
	require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
	require.Equal(t, "same-origin", h.Get("Referrer-Policy"))
}

var csrfInput = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// csrf is the token of a page's form.
func csrf(t *testing.T, p page) string {
	t.Helper()
	m := csrfInput.FindStringSubmatch(p.body)
	require.NotNil(t, m, "a form with a CSRF token: %s", p.body)
	return m[1]
}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// signInAs signs b in through the dev identity provider, as subject of
// tenant with scopes and roles (docs/console.md, Signing in with OIDC),
// and returns the jobs page.
func (b *browser) signInAs(subject, tenant string, scopes, roles []string) page {
	b.t.Helper()
	p := b.get("/console/sign-in/oidc")
	require.Equal(b.t, http.StatusSeeOther, p.status, p.body)
	authorize, err := url.Parse(p.header.Get("Location"))
	require.NoError(b.t, err)
	resp, err := b.client.Get(authorize.String())
	require.NoError(b.t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	require.NoError(b.t, resp.Body.Close())
	require.Equal(b.t, http.StatusOK, resp.StatusCode, "%s", body)
	form := url.Values{"subject": {subject}, "tenant_id": {tenant},
		"grant_scope": {strings.Join(scopes, " ")}, "roles": {strings.Join(roles, " ")}}
	for _, m := range hiddenInput.FindAllStringSubmatch(string(body), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	resp, err = b.client.PostForm(b.h.issuer.URL()+"/authorize", form)
	require.NoError(b.t, err)
	_ = resp.Body.Close()
	require.Equal(b.t, http.StatusSeeOther, resp.StatusCode)
	callback, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(b.t, err)
	// The callback goes on to the jobs from its own page, so that the
	// browser sends the new SameSite=Strict cookie.
	p = b.get(callback.RequestURI())
	require.Equal(b.t, http.StatusOK, p.status, p.body)
	require.Contains(b.t, p.body, `<meta http-equiv="refresh" content="0;url=/console/jobs">`)
	return b.get("/console/jobs")
}

// signIn signs b in with key and returns the jobs page.
func (b *browser) signIn(key string) page {
	b.t.Helper()
	form := b.get("/console/sign-in")
	require.Equal(b.t, http.StatusOK, form.status, form.body)
	p := b.post("/console/sign-in", url.Values{"csrf_token": {csrf(b.t, form)}, "api_key": {key}})
	require.Equal(b.t, http.StatusSeeOther, p.status, p.body)
	require.Equal(b.t, "/console/jobs", p.header.Get("Location"))
	return b.get("/console/jobs")
}

// sessionCookie is b's session cookie's value, "" without one.
func (b *browser) sessionCookie() string {
	u, _ := url.Parse(b.h.server.URL + "/console/")
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == console.CookieName {
			return c.Value
		}
	}
	return ""
}

func TestConsoleSignInSetsTheSessionCookie(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, _ := h.key(t, "acme")
	b := h.browser(t)

	root := b.get("/console/")
	require.Equal(t, http.StatusSeeOther, root.status)
	require.Equal(t, "/console/sign-in", root.header.Get("Location"))
	jobsPage := b.get("/console/jobs")
	require.Equal(t, http.StatusSeeOther, jobsPage.status, "signed out")
	require.Equal(t, "/console/sign-in", jobsPage.header.Get("Location"))

	form := b.get("/console/sign-in")
	require.Equal(t, http.StatusOK, form.status)
	require.Contains(t, form.body, `<label for="api_key">API key</label>`)
	require.Equal(t, "no-store", form.header.Get("Cache-Control"))
	resp, err := b.client.PostForm(h.server.URL+"/console/sign-in", url.Values{"csrf_token": {csrf(t, form)}, "api_key": {key}})
	require.NoError(t, err)
	signedIn := read(t, resp)
	require.Equal(t, http.StatusSeeOther, signedIn.status, signedIn.body)
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == console.CookieName {
			session = c
		}
	}
	require.NotNil(t, session, "the session cookie is set")
	require.True(t, session.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, session.SameSite)
	require.Equal(t, "/console/", session.Path)
	require.False(t, session.Secure, "plain HTTP")
	require.Equal(t, int((12 * time.Hour).Seconds()), session.MaxAge)
	require.NotContains(t, session.Value, key)

	p := b.get("/console/jobs")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "Tenant <strong>acme</strong>")
	require.Equal(t, "/console/jobs", b.get("/console/").header.Get("Location"))

	// Over TLS the cookie is Secure.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "https://gateway.test/console/sign-in",
		strings.NewReader(url.Values{"csrf_token": {"t"}, "api_key": {key}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "gateway_console_sign_in", Value: "t"})
	h.con.ServeHTTP(rec, req)
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	var secure bool
	for _, c := range rec.Result().Cookies() {
		if c.Name == console.CookieName {
			secure = c.Secure
		}
	}
	require.True(t, secure, "Secure over TLS")
}

func TestConsoleSignInRefusesABadKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	b := h.browser(t)
	for _, tc := range []struct {
		key    string
		status int
		says   string
	}{
		{"gwk_abcdefghijklmnop_" + strings.Repeat("a", 52), http.StatusUnauthorized, "This API key is not valid"},
		{"not a key", http.StatusUnprocessableEntity, "Enter a gateway API key"},
	} {
		form := b.get("/console/sign-in")
		p := b.post("/console/sign-in", url.Values{"csrf_token": {csrf(t, form)}, "api_key": {tc.key}})
		require.Equal(t, tc.status, p.status, p.body)
		require.Contains(t, p.body, tc.says)
		require.Contains(t, p.body, `<form class="sign-in"`, "the form again")
		require.Empty(t, b.sessionCookie())
	}
}

func TestConsoleJobsListsTheTenantsJobsOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, _ := h.key(t, "acme")
	ours := h.seed(t, jobs.Record{Tenant: "acme"})
	theirs := h.seed(t, jobs.Record{Tenant: "globex"})
	p := h.browser(t).signIn(key)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, ours.ID)
	require.Contains(t, p.body, `href="/console/jobs/`+ours.ID+`?service=translations"`)
	require.NotContains(t, p.body, theirs.ID)
	require.Contains(t, p.body, "1 jobs")
}

func TestConsoleJobsFiltersAndPages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, _ := h.key(t, "acme")
	start := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	var pending []string
	for i := range 30 {
		job := h.seed(t, jobs.Record{Tenant: "acme", CreatedAt: start.Add(time.Duration(i) * time.Second)})
		pending = append(pending, job.ID)
	}
	completed := time.Now().UTC()
	failed := h.seed(t, jobs.Record{Tenant: "acme", Status: jobs.StatusFailed, Provider: "beta", ErrorCode: "PROVIDER_ERROR",
		ErrorMessage: "down", CreatedAt: start.Add(-time.Minute), ProcessedAt: &completed, CompletedAt: &completed})
	b := h.browser(t)
	b.signIn(key)

	p := b.get("/console/jobs?status=failed&provider=beta&service=translations")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, failed.ID)
	require.Contains(t, p.body, "PROVIDER_ERROR")
	require.NotContains(t, p.body, pending[0])
	require.Contains(t, p.body, `<option value="failed" selected>`)
	require.Contains(t, p.body, `id="f-provider" name="provider" value="beta"`)

	p = b.get("/console/jobs?provider=alpha")
	require.Contains(t, p.body, "0 jobs", "the provider filter reaches the API")

	p = b.get("/console/jobs?status=bogus")
	require.Equal(t, http.StatusUnprocessableEntity, p.status)
	require.Contains(t, p.body, "filter[status]", "the API's refusal is shown")

	// 31 jobs, 25 a page: newest first, the second page by the API's
	// next link.
	p = b.get("/console/jobs?status=pending")
	require.Contains(t, p.body, pending[29])
	require.NotContains(t, p.body, pending[0])
	next := regexp.MustCompile(`rel="next" href="([^"]+)"`).FindStringSubmatch(p.body)
	require.NotNil(t, next, p.body)
	link := strings.ReplaceAll(next[1], "&amp;", "&")
	require.Contains(t, link, "status=pending")
	require.NotContains(t, p.body, `rel="prev"`)
	p = b.get(link)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, pending[0])
	require.NotContains(t, p.body, pending[29])
	require.NotContains(t, p.body, `rel="next"`)
	require.Contains(t, p.body, `rel="prev"`)
}

func TestConsoleJobShowsTheRoutingAttempts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, _ := h.key(t, "acme")
	processed := time.Now().UTC().Add(-time.Minute)
	done := time.Now().UTC()
	first := `{"provider_id":"alpha","reason":"policy_rule","policy_id":"0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f","policy_version":2,"policy_source":"tenant_default","attempt":1,"decided_at":"2026-12-07T01:00:00Z","provider_evaluations":[{"provider_id":"alpha","selected":true,"reason":"selected","message":"cheapest","evaluated_at":"2026-12-07T01:00:00Z"},{"provider_id":"beta","selected":false,"reason":"lower_rank","message":"dearer","evaluated_at":"2026-12-07T01:00:00Z"}]}`
	second := `{"provider_id":"beta","reason":"failover","attempt":2,"decided_at":"2026-12-07T01:00:05Z","provider_evaluations":[{"provider_id":"alpha","selected":false,"reason":"failed","message":"alpha timed out","evaluated_at":"2026-12-07T01:00:05Z"},{"provider_id":"beta","selected":true,"reason":"selected","message":"next","evaluated_at":"2026-12-07T01:00:05Z"}]}`
	job := h.seed(t, jobs.Record{Tenant: "acme", Status: jobs.StatusFailed, Provider: "beta", Routing: second,
		RoutingHistory: "[" + first + "," + second + "]", ErrorCode: "PROVIDER_ERROR", ErrorMessage: "beta broke",
		ProcessedAt: &processed, CompletedAt: &done})
	other := h.seed(t, jobs.Record{Tenant: "globex"})
	b := h.browser(t)
	b.signIn(key)

	for _, path := range []string{"/console/jobs/" + job.ID + "?service=translations", "/console/jobs/" + job.ID} {
		p := b.get(path)
		require.Equal(t, http.StatusOK, p.status, p.body)
		for _, want := range []string{"Attempt 1", "Attempt 2", "policy_rule", "failover", "alpha timed out", "cheapest",
			"PROVIDER_ERROR", "beta broke", "Hello", "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f"} {
			require.Contains(t, p.body, want)
		}
		require.Less(t, strings.Index(p.body, "Attempt 1"), strings.Index(p.body, "Attempt 2"), "in order")
	}
	p := b.get("/console/jobs/" + other.ID)
	require.Equal(t, http.StatusNotFound, p.status, "another tenant's job")
	require.NotContains(t, p.body, "globex")

	// A key that may not read translations sees no translation job.
	scopes := []string{"llm-tasks:read"}
	narrow, err := h.keys.Issue(context.Background(), apikeys.Creator{Subject: "tester", Tenant: "acme", Scopes: scopes},
		apikeys.NewKey{Name: "narrow", Scopes: scopes})
	require.NoError(t, err)
	n := h.browser(t)
	n.signIn(narrow.Secret)
	p = n.get("/console/jobs/" + job.ID + "?service=translations")
	require.Equal(t, http.StatusNotFound, p.status, "what the key's scopes allow, no more")
	require.NotContains(t, p.body, "beta broke")
}

func TestConsoleRefusesAPostWithoutItsCSRFToken(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, _ := h.key(t, "acme")
	b := h.browser(t)
	b.signIn(key)
	for _, form := range []url.Values{{}, {"csrf_token": {"wrong"}}} {
		p := b.post("/console/sign-out", form)
		require.Equal(t, http.StatusForbidden, p.status)
		require.Contains(t, p.body, "CSRF")
	}
	require.Equal(t, http.StatusOK, b.get("/console/jobs").status, "still signed in")

	// The sign-in form takes its own token, not one made up.
	other := h.browser(t)
	p := other.post("/console/sign-in", url.Values{"csrf_token": {"made-up"}, "api_key": {key}})
	require.Equal(t, http.StatusForbidden, p.status)
	require.Empty(t, other.sessionCookie())
}

func TestConsoleSignOutEndsTheSession(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, _ := h.key(t, "acme")
	b := h.browser(t)
	jobsPage := b.signIn(key)
	old := b.sessionCookie()
	require.NotEmpty(t, old)
	p := b.post("/console/sign-out", url.Values{"csrf_token": {csrf(t, jobsPage)}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, "/console/sign-in", p.header.Get("Location"))
	require.Empty(t, b.sessionCookie(), "the cookie is deleted")

	// The old cookie no longer works.
	req, err := http.NewRequest(http.MethodGet, h.server.URL+"/console/jobs", nil)
	require.NoError(t, err)
	req.AddCookie(&http.Cookie{Name: console.CookieName, Value: old})
	resp, err := h.browser(t).client.Do(req)
	require.NoError(t, err)
	again := read(t, resp)
	require.Equal(t, http.StatusSeeOther, again.status)
	require.Equal(t, "/console/sign-in", again.header.Get("Location"))
}

func TestConsoleEndsTheSessionOfARevokedKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, issued := h.key(t, "acme")
	b := h.browser(t)
	b.signIn(key)
	old := b.sessionCookie()
	require.NoError(t, h.keys.Revoke(context.Background(), "acme", issued.Key.ID))
	time.Sleep(600 * time.Millisecond) // a key checked is taken as valid for 500 ms (app/apikeys)

	p := b.get("/console/jobs")
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Equal(t, "/console/sign-in?ended=1", p.header.Get("Location"))
	require.Empty(t, b.sessionCookie())
	p = b.get("/console/sign-in?ended=1")
	require.Contains(t, p.body, "Your session ended")
	_, err := h.store.APIKeys.ConsoleSession(context.Background(), console.SessionID(old), time.Now())
	require.ErrorIs(t, err, store.ErrNotFound, "the session's row is gone")
}

func TestConsoleEscapesEveryValue(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, _ := h.key(t, "acme")
	job := h.seed(t, jobs.Record{Tenant: "acme", ClientMeta: `{"note":"<script>alert(1)</script>"}`,
		Input: `{"type":"text","content":"</pre><script>alert(2)</script>","target_language":"de"}`})
	b := h.browser(t)
	b.signIn(key)
	p := b.get("/console/jobs/" + job.ID)
	require.Equal(t, http.StatusOK, p.status, p.body)
	// The only script is our own file, for the live status of a job not
	// yet ended.
	require.Equal(t, 1, strings.Count(p.body, "<script"))
	require.Contains(t, p.body, `<script src="/console/assets/live.js" defer></script>`)
	require.Contains(t, p.body, "&lt;script&gt;alert(1)&lt;/script&gt;")
	require.Contains(t, p.body, "&lt;/pre&gt;&lt;script&gt;alert(2)")

	p = b.get(`/console/jobs?provider=%22%3E%3Cscript%3Ealert(3)%3C/script%3E`)
	require.NotContains(t, p.body, "<script")
	require.Contains(t, p.body, "&#34;&gt;&lt;script&gt;alert(3)")
}

func TestConsoleSecurityHeadersOnEveryResponse(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, _ := h.key(t, "acme")
	job := h.seed(t, jobs.Record{Tenant: "acme"})
	b := h.browser(t)
	// read checks the headers of each of these.
	css := b.get("/console/assets/console.css")
	require.Equal(t, http.StatusOK, css.status)
	require.Contains(t, css.header.Get("Content-Type"), "text/css")
	b.get("/console/")
	b.get("/console/sign-in")
	b.get("/console/nowhere")
	b.signIn(key)
	for _, path := range []string{"/console/jobs", "/console/jobs/" + job.ID, "/console/jobs/" + uuid.NewString()} {
		p := b.get(path)
		require.Equal(t, "no-store", p.header.Get("Cache-Control"), path)
		require.NotContains(t, strings.ReplaceAll(p.body, `<script src="/console/assets/live.js" defer></script>`, ""), "<script",
			"no script but our own file")
		require.NotContains(t, p.body, "style=", "no inline style")
		require.NotRegexp(t, `(src|href)="(https?:)?//`, p.body, "nothing from elsewhere")
	}
}

// A link from another site arrives without the SameSite=Strict cookie:
// the console follows it again from its own page instead of signing the
// person out, and keeps the session; without a cookie at all, from this
// site, it is the sign-in page.
func TestConsoleLinkFromAnotherSite(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, _ := h.key(t, "acme")
	b := h.browser(t)
	b.signIn(key)

	req, err := http.NewRequest(http.MethodGet, h.server.URL+"/console/jobs?status=failed", nil)
	require.NoError(t, err)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req) // as the browser sends it: no cookie
	require.NoError(t, err)
	p := read(t, resp)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `content="0;url=/console/jobs?status=failed"`)
	require.Empty(t, p.header.Values("Set-Cookie"), "nothing deleted")
	require.Equal(t, http.StatusOK, b.get("/console/jobs?status=failed").status, "the session lives on")

	resp, err = http.Get(h.server.URL + "/console/jobs")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, "/console/sign-in", resp.Request.URL.Path)
}

// An id with an escaped "/" stays one segment: it does not reach another
// route of the API.
func TestConsoleKeepsAnIDOneSegment(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, _ := h.key(t, "acme")
	job := h.seed(t, jobs.Record{Tenant: "acme"})
	b := h.browser(t)
	b.signIn(key)
	// /v1/translations/{id}/events would answer; {id}%2Fevents is no job.
	p := b.get("/console/jobs/" + job.ID + "%2Fevents?service=translations")
	require.Equal(t, http.StatusNotFound, p.status, p.body)
}

// A notice names only an id: a link cannot make the console say a
// sentence of its choosing.
func TestConsoleNoticesNameIDsOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, _ := h.key(t, "acme")
	b := h.browser(t)
	b.signIn(key)
	p := b.get("/console/jobs?deleted=0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f")
	require.Contains(t, p.body, "<code>0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f</code> was deleted")
	p = b.get("/console/jobs?deleted=" + url.QueryEscape("all your jobs; call +1 555 0100 to restore them"))
	require.NotContains(t, p.body, "was deleted")
	require.NotContains(t, p.body, "555")
}
