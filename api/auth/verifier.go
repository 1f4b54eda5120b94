// Package auth verifies bearer tokens with go-oidc and puts the caller on the
// gin context; handlers read it through CallerFrom and the Require helpers.
package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ai-job-gateway/gateway/internal/ttlcache"
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
	// clockLeeway tolerates clock skew on nbf and iat; go-oidc itself
	// allows 5 minutes on nbf.
	clockLeeway      = time.Minute
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

	// verified holds the callers of tokens that passed Verify, by the
	// token's SHA-256, so that a client's next request with the same token
	// skips the signature (docs/api.md, Authentication).
	verified *ttlcache.Cache[[sha256.Size]byte, verifiedToken]

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
	v := &Verifier{issuer: issuerURL, audience: audience, client: client, now: time.Now}
	v.verified = ttlcache.New[[sha256.Size]byte, verifiedToken](verifiedTTL, verifiedTokens, func() time.Time { return v.now() })
	return v
}

// A verified token is served from the verifier's cache for at most
// verifiedTTL, and never past its exp; at most verifiedTokens are kept.
const (
	verifiedTTL    = time.Minute
	verifiedTokens = 10_000
)

// verifiedToken is a token that passed Verify: its caller and its expiry.
type verifiedToken struct {
	caller  Caller
	expires time.Time
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
	var meta struct {
		JWKSURL string `json:"jwks_uri"`
	}
	if err == nil {
		err = provider.Claims(&meta)
	}
	if err == nil && meta.JWKSURL == "" {
		err = errors.New("the discovery document has no jwks_uri")
	}

	v.mu.Lock()
	if err != nil {
		d.err = fmt.Errorf("OIDC discovery for %s: %w", v.issuer, err)
	} else {
		keys := &keySet{url: meta.JWKSURL, client: v.client, now: v.now}
		v.verifier = oidc.NewVerifier(v.issuer, keys, &oidc.Config{
			ClientID:             v.audience,
			SupportedSigningAlgs: signingAlgs,
			Now:                  v.now,
		})
	}
	v.pending = nil
	v.mu.Unlock()
	close(d.done)
}

// Verify checks rawToken and returns its caller. A rejected token gives a
// *TokenError; any other error means the issuer or its keys could not be
// fetched. A token verified in the last minute is not verified again until
// it expires; rejected tokens are not remembered.
func (v *Verifier) Verify(ctx context.Context, rawToken string) (Caller, error) {
	if rawToken == "" {
		return Caller{}, &TokenError{Kind: ErrNoToken, Reason: "missing bearer token"}
	}
	tok, err := v.verified.Get(ctx, sha256.Sum256([]byte(rawToken)), func(ctx context.Context) (verifiedToken, error) {
		return v.verify(ctx, rawToken)
	})
	if err != nil {
		return Caller{}, err
	}
	if tok.expires.Before(v.now()) {
		return Caller{}, &TokenError{Kind: ErrExpired, Reason: "the token has expired"}
	}
	return tok.caller, nil
}

// verify checks rawToken's claims, then its signature. The claims are
// checked before the signature, so that a token that cannot be valid costs
// no key lookup, and again once verified.
func (v *Verifier) verify(ctx context.Context, rawToken string) (verifiedToken, error) {
	jws, err := jose.ParseSignedCompact(rawToken, joseAlgs())
	if err != nil {
		return verifiedToken{}, &TokenError{Kind: ErrMalformed, Reason: "the token is not a JWT signed with a supported algorithm", Cause: err}
	}
	if len(jws.Signatures) > 0 {
		if typ, _ := jws.Signatures[0].Protected.ExtraHeaders[jose.HeaderType].(string); !accessTokenType(typ) {
			return verifiedToken{}, &TokenError{Kind: ErrMalformed, Reason: fmt.Sprintf("the token's typ %q is not an access token's (at+jwt or JWT)", typ)}
		}
	}
	if _, _, terr := v.checkClaims(jws.UnsafePayloadWithoutVerification()); terr != nil {
		return verifiedToken{}, terr
	}
	ov, err := v.oidcVerifier(ctx)
	if err != nil {
		return verifiedToken{}, err
	}
	lookup := &keyLookup{}
	tok, err := ov.Verify(context.WithValue(ctx, keyLookupKey{}, lookup), rawToken)
	if err != nil {
		return verifiedToken{}, rejection(lookup, err)
	}
	var payload json.RawMessage
	if err := tok.Claims(&payload); err != nil {
		return verifiedToken{}, &TokenError{Kind: ErrMalformed, Reason: "the token claims are malformed", Cause: err}
	}
	caller, expires, terr := v.checkClaims(payload)
	if terr != nil {
		return verifiedToken{}, terr
	}
	return verifiedToken{caller: caller, expires: expires}, nil
}

// accessTokenType accepts the typ header of an access token: at+jwt
// (RFC 9068), JWT, or none, as most issuers send. An ID token is refused by
// its audience, which names the client, not this API.
func accessTokenType(typ string) bool {
	typ = strings.TrimPrefix(strings.ToLower(typ), "application/")
	return typ == "" || typ == "jwt" || typ == "at+jwt"
}

// rejection turns a go-oidc failure into an error for Verify: the key set
// could not be fetched, or the signature, or (the claims having been
// checked already) the expiry against a clock that moved on.
func rejection(lookup *keyLookup, err error) error {
	var expired *oidc.TokenExpiredError
	switch {
	case lookup.unavailable != nil:
		return lookup.unavailable
	case errors.As(err, &expired):
		// go-oidc checks expiry before the signature: the token expired
		// since its claims were checked.
		return &TokenError{Kind: ErrExpired, Reason: "the token has expired", Cause: err}
	case lookup.unknownKey:
		return &TokenError{Kind: ErrSignature, Reason: "the token signature could not be verified: its signing key (kid) is not in the issuer's key set", Cause: err}
	case !lookup.verified:
		return &TokenError{Kind: ErrSignature, Reason: "the token signature could not be verified", Cause: err}
	default:
		return &TokenError{Kind: ErrClaims, Reason: "the token claims were rejected", Cause: err}
	}
}

// checkClaims checks the claims of payload and returns the caller they
// name and the token's expiry. Each claim must have its documented type:
// a roles string or a scope array is malformed, not read leniently.
func (v *Verifier) checkClaims(payload []byte) (Caller, time.Time, *TokenError) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(payload, &raw); err != nil {
		return Caller{}, time.Time{}, &TokenError{Kind: ErrMalformed, Reason: "the token claims are malformed", Cause: err}
	}
	var (
		iss, sub, tenant, scope string
		aud                     jwt.Audience
		roles                   []string
		exp, nbf, iat           *jwt.NumericDate
	)
	for _, c := range []struct {
		name, want string
		into       any
	}{
		{"iss", "a string", &iss},
		{"aud", "a string or an array of strings", &aud},
		{"exp", "a number", &exp},
		{"nbf", "a number", &nbf},
		{"iat", "a number", &iat},
		{"sub", "a string", &sub},
		{"tenant_id", "a string", &tenant},
		{"scope", "a space-separated string", &scope},
		{"roles", "an array of strings", &roles},
	} {
		if m, ok := raw[c.name]; ok {
			if err := json.Unmarshal(m, c.into); err != nil {
				return Caller{}, time.Time{}, malformedClaim(c.name+" must be "+c.want, err)
			}
		}
	}

	now := v.now()
	switch {
	case iss != v.issuer:
		return Caller{}, time.Time{}, &TokenError{Kind: ErrIssuer, Reason: fmt.Sprintf("the token was not issued by %s", v.issuer)}
	case !aud.Contains(v.audience):
		return Caller{}, time.Time{}, &TokenError{Kind: ErrAudience, Reason: fmt.Sprintf("the token audience does not include %q", v.audience)}
	case exp == nil:
		return Caller{}, time.Time{}, &TokenError{Kind: ErrClaims, Reason: "the token has no expiry (exp claim)"}
	case exp.Time().Before(now):
		return Caller{}, time.Time{}, &TokenError{Kind: ErrExpired, Reason: "the token has expired"}
	// go-oidc allows 5 minutes of skew on nbf; enforce a tighter bound.
	case nbf != nil && now.Add(clockLeeway).Before(nbf.Time()):
		return Caller{}, time.Time{}, notYetValid("nbf")
	case iat != nil && now.Add(clockLeeway).Before(iat.Time()):
		return Caller{}, time.Time{}, notYetValid("iat")
	case strings.TrimSpace(sub) == "":
		return Caller{}, time.Time{}, &TokenError{Kind: ErrClaims, Reason: "the token has no subject (sub claim)"}
	}
	if problem := subjectProblem(sub); problem != "" {
		return Caller{}, time.Time{}, malformedClaim("sub "+problem, nil)
	}
	if tenant != "" {
		if problem := tenantProblem(tenant); problem != "" {
			return Caller{}, time.Time{}, malformedClaim("tenant_id "+problem, nil)
		}
	}
	var cleanRoles []string
	for _, r := range roles {
		if r != "" {
			cleanRoles = append(cleanRoles, r)
		}
	}
	// Clipped: the caller of a remembered token is shared by its requests,
	// and an append to its slices must not write into another's.
	return Caller{Subject: sub, Tenant: tenant, Scopes: slices.Clip(nilIfEmpty(strings.Fields(scope))), Roles: slices.Clip(cleanRoles)}, exp.Time(), nil
}

func malformedClaim(problem string, cause error) *TokenError {
	return &TokenError{Kind: ErrClaims, Reason: "the token claims are malformed: " + problem, Cause: cause}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func notYetValid(claim string) *TokenError {
	return &TokenError{Kind: ErrNotYetValid, Reason: fmt.Sprintf("the token is not valid yet (%s is in the future)", claim)}
}

func joseAlgs() []jose.SignatureAlgorithm {
	algs := make([]jose.SignatureAlgorithm, len(signingAlgs))
	for i, a := range signingAlgs {
		algs[i] = jose.SignatureAlgorithm(a)
	}
	return algs
}

// Issuer is the issuer URL tokens must come from.
func (v *Verifier) Issuer() string { return v.issuer }

// Audience is the audience tokens must carry.
func (v *Verifier) Audience() string { return v.audience }
