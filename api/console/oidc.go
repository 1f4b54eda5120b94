package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// OIDC is the identity provider people may sign in with, through the
// authorization code grant with PKCE (docs/console.md, Signing in with
// OIDC). The access token it issues is the session's credential: the API
// verifies it as any bearer token.
type OIDC struct {
	// IssuerURL is the gateway's OIDC issuer (OIDC_ISSUER_URL).
	IssuerURL string
	// ClientID and ClientSecret are the console's client at the issuer;
	// the secret may be empty (a public client: PKCE alone).
	ClientID, ClientSecret string
	// RedirectURL is where the issuer sends people back; empty: the
	// console's own address as the request reached it.
	RedirectURL string
	// Client makes the discovery and token requests; nil is
	// http.DefaultClient.
	Client *http.Client
}

// oidcFlowCookie holds a sign-in's state, nonce and PKCE verifier, sealed,
// while the person is at the issuer. SameSite=Lax: the issuer's redirect
// back is a navigation from another site.
const oidcFlowCookie = "gateway_console_oidc"

// oidcFlow is what the console keeps of a sign-in under way.
type oidcFlow struct {
	State    string `json:"state"`
	Nonce    string `json:"nonce"`
	Verifier string `json:"verifier"`
}

// oidcProvider discovers the issuer once it is first needed, again after
// a failure.
type oidcProvider struct {
	mu       sync.Mutex
	provider *oidc.Provider
}

func (p *oidcProvider) get(ctx context.Context, cfg *OIDC) (*oidc.Provider, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.provider != nil {
		return p.provider, nil
	}
	provider, err := oidc.NewProvider(cfg.context(ctx), cfg.IssuerURL)
	if err != nil {
		return nil, err
	}
	p.provider = provider
	return provider, nil
}

// context is ctx with cfg's HTTP client for go-oidc and oauth2.
func (cfg *OIDC) context(ctx context.Context) context.Context {
	if cfg.Client == nil {
		return ctx
	}
	return oidc.ClientContext(ctx, cfg.Client)
}

// oauth2Config is the client's configuration for r's sign-in.
func (c *Console) oauth2Config(r *http.Request, provider *oidc.Provider) *oauth2.Config {
	redirect := c.cfg.OIDC.RedirectURL
	if redirect == "" {
		scheme := "http"
		if overTLS(r) {
			scheme = "https"
		}
		redirect = scheme + "://" + r.Host + Path + "oidc/callback"
	}
	return &oauth2.Config{ClientID: c.cfg.OIDC.ClientID, ClientSecret: c.cfg.OIDC.ClientSecret,
		Endpoint: provider.Endpoint(), RedirectURL: redirect, Scopes: []string{oidc.ScopeOpenID}}
}

// oidcStart serves GET /console/sign-in/oidc: off to the issuer, with a
// state, a nonce and a PKCE challenge.
func (c *Console) oidcStart(w http.ResponseWriter, r *http.Request) {
	if c.cfg.OIDC == nil {
		c.problem(w, http.StatusNotFound, nil, "Not offered", "This gateway offers no sign-in through an identity provider; sign in with an API key.")
		return
	}
	provider, err := c.oidc.get(r.Context(), c.cfg.OIDC)
	if err != nil {
		c.cfg.Logger.Warn("console: OIDC discovery", "issuer", c.cfg.OIDC.IssuerURL, "error", err)
		c.renderSignIn(w, r, http.StatusBadGateway, signInPage{Error: "The identity provider could not be reached; try again, or sign in with an API key."})
		return
	}
	flow := oidcFlow{State: randomToken(), Nonce: randomToken(), Verifier: oauth2.GenerateVerifier()}
	raw, _ := json.Marshal(flow)
	sealed, err := c.seal.seal(string(raw), oidcFlowCookie)
	if err != nil {
		c.problem(w, http.StatusInternalServerError, nil, "Something went wrong", "The sign-in could not be started; try again.")
		return
	}
	ck := cookie(r, oidcFlowCookie, encodeSealed(sealed), 600)
	ck.SameSite = http.SameSiteLaxMode
	http.SetCookie(w, ck)
	http.Redirect(w, r, c.oauth2Config(r, provider).AuthCodeURL(flow.State, oauth2.S256ChallengeOption(flow.Verifier), oidc.Nonce(flow.Nonce)), http.StatusSeeOther)
}

// oidcCallback serves GET /console/oidc/callback: the code is exchanged
// with the PKCE verifier, the ID token verified with its nonce, and the
// access token, once the API takes it, starts a session until it expires.
func (c *Console) oidcCallback(w http.ResponseWriter, r *http.Request) {
	if c.cfg.OIDC == nil {
		c.problem(w, http.StatusNotFound, nil, "Not offered", "This gateway offers no sign-in through an identity provider.")
		return
	}
	fail := func(status int, message string) {
		c.renderSignIn(w, r, status, signInPage{Error: message})
	}
	flow, err := c.openFlow(r)
	gone := cookie(r, oidcFlowCookie, "", -1)
	gone.SameSite = http.SameSiteLaxMode
	http.SetCookie(w, gone)
	q := r.URL.Query()
	switch {
	case err != nil || !sameToken(q.Get("state"), flow.State):
		fail(http.StatusForbidden, "This sign-in was not started here, or took too long (its state does not match). Try again.")
		return
	case q.Get("error") != "":
		fail(http.StatusUnauthorized, "The identity provider refused the sign-in: "+q.Get("error")+" "+q.Get("error_description"))
		return
	}
	ctx := c.cfg.OIDC.context(r.Context())
	provider, err := c.oidc.get(ctx, c.cfg.OIDC)
	if err != nil {
		fail(http.StatusBadGateway, "The identity provider could not be reached; try again.")
		return
	}
	token, err := c.oauth2Config(r, provider).Exchange(ctx, q.Get("code"), oauth2.VerifierOption(flow.Verifier))
	if err != nil {
		c.cfg.Logger.Warn("console: OIDC code exchange", "error", err)
		fail(http.StatusUnauthorized, "The identity provider did not exchange the sign-in's code; try again.")
		return
	}
	rawID, _ := token.Extra("id_token").(string)
	idToken, err := provider.Verifier(&oidc.Config{ClientID: c.cfg.OIDC.ClientID}).Verify(ctx, rawID)
	if err != nil || !sameToken(idToken.Nonce, flow.Nonce) {
		c.cfg.Logger.Warn("console: OIDC ID token refused", "error", err)
		fail(http.StatusUnauthorized, "The identity provider's answer could not be verified; try again.")
		return
	}
	var claims struct {
		Tenant string `json:"tenant_id"`
	}
	_ = idToken.Claims(&claims)
	if len(claims.Tenant) > maxTenantLength {
		fail(http.StatusUnprocessableEntity, "The identity provider's tenant_id is longer than a tenant's slug can be.")
		return
	}
	// A token without a tenant nor admin:cross-tenant (an operator's
	// for providers, say) may not list jobs: 403 still says the API took it.
	a, err := c.call(r, token.AccessToken, http.MethodGet, "/v1/jobs", url.Values{"page[size]": {"1"}}, nil)
	if err == nil && a.Status != http.StatusOK && a.Status != http.StatusForbidden {
		fail(a.Status, "The gateway refused the identity provider's token: "+a.message())
		return
	}
	if err == nil {
		err = c.startSessionUntil(w, r, claims.Tenant, token.AccessToken, token.Expiry)
	}
	if err != nil {
		c.cfg.Logger.Error("console: start session", "error", err)
		c.problem(w, http.StatusInternalServerError, nil, "Something went wrong", "The session could not be started; try again.")
		return
	}
	// The issuer's redirect brought the person here: the jobs page is
	// reached from the console's own page, so the new session's
	// SameSite=Strict cookie goes with it.
	c.continueAt(w, Path+"jobs")
}

// maxTenantLength is the longest tenant slug a session records.
const maxTenantLength = 63

// openFlow reads the sign-in under way from its cookie.
func (c *Console) openFlow(r *http.Request) (oidcFlow, error) {
	var flow oidcFlow
	ck, err := r.Cookie(oidcFlowCookie)
	if err != nil {
		return flow, err
	}
	sealed, err := decodeSealed(ck.Value)
	if err != nil {
		return flow, err
	}
	raw, err := c.seal.open(sealed, oidcFlowCookie)
	if err != nil {
		return flow, err
	}
	if err := json.Unmarshal([]byte(raw), &flow); err != nil || flow.State == "" {
		return flow, errors.New("console: a sign-in cookie without state")
	}
	return flow, nil
}
