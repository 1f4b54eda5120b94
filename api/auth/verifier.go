// Package auth verifies bearer tokens with go-oidc and puts the caller on the
// gin context; handlers read it through CallerFrom and the Require helpers.
package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Kinds of token rejection; a *TokenError matches one of them with errors.Is.
var (
	ErrNoToken     = errors.New("no bearer token")
	ErrMalformed   = errors.New("malformed token")
	ErrSignature   = errors.New("bad token signature")
	ErrIssuer      = errors.New("wrong token issuer")
	ErrAudience    = errors.New("wrong token audience")
	ErrExpired     = errors.New("token expired")
	ErrNotYetValid = errors.New("token not valid yet")
	ErrClaims      = errors.New("bad token claims")
)

// TokenError is a rejected token: Reason is safe to show the client, Cause
// (possibly nil) is the underlying error for logs.
type TokenError struct {
	Kind   error
	Reason string
	Cause  error
}

func (e *TokenError) Error() string {
	if e.Cause != nil {
		return e.Reason + ": " + e.Cause.Error()
	}
	return e.Reason
}

// Unwrap exposes Kind and Cause to errors.Is and errors.As.
func (e *TokenError) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Kind, e.Cause}
	}
	return []error{e.Kind}
}

const (
	// nbfLeeway tolerates clock skew; go-oidc itself allows 5 minutes.
	nbfLeeway        = time.Minute
	discoveryTimeout = 10 * time.Second
)

// signingAlgs are the asymmetric algorithms go-oidc supports: RS256 for the
// dev issuer, the rest for real IdPs. Never HS* or none; go-jose also binds
// each algorithm to its key type, so no algorithm confusion.
var signingAlgs = []string{
	oidc.RS256, oidc.RS384, oidc.RS512,
	oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.PS256, oidc.PS384, oidc.PS512,
	oidc.EdDSA,
}

// Verifier checks access tokens against an OIDC issuer; it is safe for
// concurrent use.
type Verifier struct {
	issuer   string
	audience string
	client   *http.Client
	now      func() time.Time

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier // nil until discovery succeeded
	pending  *discovery            // the discovery in flight, if any
}

type discovery struct {
	done chan struct{}
	err  error
}

// NewVerifier verifies tokens with go-oidc against issuerURL's discovery
// document and JWKS; audience must be contained in aud. Discovery is lazy and
// retried, since the dev issuer is served by a listener that is not up yet
// when the verifier is built. A nil client means one with a 10 s timeout.
func NewVerifier(issuerURL, audience string, client *http.Client) *Verifier {
	if client == nil {
		client = &http.Client{Timeout: discoveryTimeout}
	}
	return &Verifier{issuer: issuerURL, audience: audience, client: client, now: time.Now}
}

// Ready performs discovery if not done yet; nil once the provider is known.
func (v *Verifier) Ready(ctx context.Context) error {
	_, err := v.oidcVerifier(ctx)
	return err
}

// oidcVerifier returns the go-oidc verifier, discovering the provider first
// if needed. Concurrent callers share one discovery; a failed one is retried
// by the next caller.
func (v *Verifier) oidcVerifier(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	v.mu.Lock()
	if v.verifier != nil {
		defer v.mu.Unlock()
		return v.verifier, nil
	}
	d := v.pending
	if d == nil {
		d = &discovery{done: make(chan struct{})}
		v.pending = d
		go v.discover(d)
	}
	v.mu.Unlock()

	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-d.done:
	}
	if d.err != nil {
		return nil, d.err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.verifier, nil
}

// discover runs detached from any request so that a cancelled caller does
// not fail the others waiting on it.
func (v *Verifier) discover(d *discovery) {
	ctx, cancel := context.WithTimeout(oidc.ClientContext(context.Background(), v.client), discoveryTimeout)
	defer cancel()
	provider, err := oidc.NewProvider(ctx, v.issuer)

	v.mu.Lock()
	if err != nil {
		d.err = fmt.Errorf("OIDC discovery for %s: %w", v.issuer, err)
	} else {
		// The provider keeps the client for its JWKS requests.
		v.verifier = provider.Verifier(&oidc.Config{
			ClientID:             v.audience,
			SupportedSigningAlgs: signingAlgs,
			Now:                  v.now,
		})
	}
	v.pending = nil
	v.mu.Unlock()
	close(d.done)
}

// claims are the token claims the gateway reads beyond go-oidc's checks.
type claims struct {
	Subject   string           `json:"sub"`
	Tenant    string           `json:"tenant_id"`
	Scope     stringList       `json:"scope"`
	Roles     stringList       `json:"roles"`
	NotBefore *jwt.NumericDate `json:"nbf"`
}

// Verify checks rawToken and returns its caller. A rejected token gives a
// *TokenError; any other error means the issuer could not be discovered.
func (v *Verifier) Verify(ctx context.Context, rawToken string) (Caller, error) {
	if rawToken == "" {
		return Caller{}, &TokenError{Kind: ErrNoToken, Reason: "missing bearer token"}
	}
	ov, err := v.oidcVerifier(ctx)
	if err != nil {
		return Caller{}, err
	}
	tok, err := ov.Verify(ctx, rawToken)
	if err != nil {
		return Caller{}, v.rejection(rawToken, err)
	}
	var cl claims
	if err := tok.Claims(&cl); err != nil {
		return Caller{}, &TokenError{Kind: ErrClaims, Reason: "the token claims are malformed", Cause: err}
	}
	// go-oidc allows 5 minutes of skew on nbf; enforce a tighter bound.
	if cl.NotBefore != nil && v.now().Add(nbfLeeway).Before(cl.NotBefore.Time()) {
		return Caller{}, notYetValid(nil)
	}
	if strings.TrimSpace(cl.Subject) == "" {
		return Caller{}, &TokenError{Kind: ErrClaims, Reason: "the token has no subject (sub claim)"}
	}
	return Caller{Subject: cl.Subject, Tenant: cl.Tenant, Scopes: cl.Scope, Roles: cl.Roles}, nil
}

// rejection turns a go-oidc failure into a TokenError. go-oidc checks the
// signature, then iss, aud and exp, and only types the expiry error, so the
// other cases are told apart from the (unverified) claims: a token that
// fails with a right issuer, audience and nbf failed on its signature.
func (v *Verifier) rejection(rawToken string, err error) *TokenError {
	var expired *oidc.TokenExpiredError
	if errors.As(err, &expired) {
		if expired.Expiry.IsZero() {
			return &TokenError{Kind: ErrClaims, Reason: "the token has no expiry (exp claim)", Cause: err}
		}
		return &TokenError{Kind: ErrExpired, Reason: "the token has expired", Cause: err}
	}
	tok, perr := jwt.ParseSigned(rawToken, joseAlgs())
	if perr != nil {
		return &TokenError{Kind: ErrMalformed, Reason: "the token is not a JWT signed with a supported algorithm", Cause: err}
	}
	var unverified jwt.Claims
	if perr := tok.UnsafeClaimsWithoutVerification(&unverified); perr != nil {
		return &TokenError{Kind: ErrMalformed, Reason: "the token claims are malformed", Cause: err}
	}
	switch {
	case unverified.Issuer != v.issuer:
		return &TokenError{Kind: ErrIssuer, Reason: fmt.Sprintf("the token was not issued by %s", v.issuer), Cause: err}
	case !unverified.Audience.Contains(v.audience):
		return &TokenError{Kind: ErrAudience, Reason: fmt.Sprintf("the token audience does not include %q", v.audience), Cause: err}
	case unverified.NotBefore != nil && v.now().Add(nbfLeeway).Before(unverified.NotBefore.Time()):
		return notYetValid(err)
	default:
		return &TokenError{Kind: ErrSignature, Reason: "the token signature could not be verified", Cause: err}
	}
}

func notYetValid(cause error) *TokenError {
	return &TokenError{Kind: ErrNotYetValid, Reason: "the token is not valid yet (nbf is in the future)", Cause: cause}
}

func joseAlgs() []jose.SignatureAlgorithm {
	algs := make([]jose.SignatureAlgorithm, len(signingAlgs))
	for i, a := range signingAlgs {
		algs[i] = jose.SignatureAlgorithm(a)
	}
	return algs
}

// stringList reads a claim given as a space-separated string (OAuth scope)
// or as an array of strings.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*l = nil
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = strings.Fields(s)
		return nil
	default:
		var items []string
		if err := json.Unmarshal(b, &items); err != nil {
			return fmt.Errorf("want a string or an array of strings: %w", err)
		}
		*l = nil
		for _, s := range items {
			if s != "" {
				*l = append(*l, s)
			}
		}
		return nil
	}
}
