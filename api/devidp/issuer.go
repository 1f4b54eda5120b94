// Package devidp is the development identity provider of `gateway dev`: an
// OIDC issuer with a persistent RS256 key that mints access tokens for the
// gateway. It is never used by `gateway serve`.
package devidp

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"
)

// Path is where Routes serves the issuer; the issuer URL ends in it.
const Path = "/dev/oidc"

// DefaultAudience is the audience of tokens that name none.
const DefaultAudience = "ai-job-gateway"

// DefaultTTL is the lifetime of tokens that ask for none.
const DefaultTTL = time.Hour

// Issuer signs tokens with the dev key; it is safe for concurrent use.
type Issuer struct {
	url      string
	key      jose.JSONWebKey
	signer   jose.Signer
	audience string
	now      func() time.Time
	codes    *codeStore // the authorization codes issued, shared by copies
}

// Open loads the signing key from dataDir (creating
// dataDir/dev-oidc/signing-key.json, mode 0600, on first use) and records
// issuerURL in dataDir/dev-oidc/issuer so `gateway token` can mint tokens for
// the running issuer. Keys outlive restarts.
func Open(dataDir, issuerURL string) (*Issuer, error) {
	if err := checkIssuerURL(issuerURL); err != nil {
		return nil, err
	}
	dir := filepath.Join(dataDir, stateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("dev identity provider: %w", err)
	}
	key, err := loadOrCreateKey(dir)
	if err != nil {
		return nil, fmt.Errorf("dev identity provider: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, issuerFile), []byte(issuerURL+"\n")); err != nil {
		return nil, fmt.Errorf("dev identity provider: %w", err)
	}
	return newIssuer(issuerURL, key)
}

// OpenExisting loads the key and issuer URL written by a running or earlier
// `gateway dev` with the same data dir (used by `gateway token`).
func OpenExisting(dataDir string) (*Issuer, error) {
	dir := filepath.Join(dataDir, stateDir)
	missing := fmt.Errorf("no dev identity provider in %s: start `gateway dev --data-dir %s` first", dataDir, dataDir)
	raw, err := os.ReadFile(filepath.Join(dir, issuerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, missing
	}
	if err != nil {
		return nil, fmt.Errorf("dev identity provider: %w", err)
	}
	issuerURL := strings.TrimSpace(string(raw))
	if err := checkIssuerURL(issuerURL); err != nil {
		return nil, fmt.Errorf("dev identity provider: %s: %w", filepath.Join(dir, issuerFile), err)
	}
	key, err := readKey(filepath.Join(dir, keyFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, missing
	}
	if err != nil {
		return nil, fmt.Errorf("dev identity provider: %w", err)
	}
	return newIssuer(issuerURL, key)
}

func newIssuer(issuerURL string, key jose.JSONWebKey) (*Issuer, error) {
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: jose.RS256, Key: key}, // a JWK key puts its kid in the header
		(&jose.SignerOptions{}).WithType("at+jwt"),       // RFC 9068 access token
	)
	if err != nil {
		return nil, fmt.Errorf("dev identity provider: signer: %w", err)
	}
	return &Issuer{url: issuerURL, key: key, signer: signer, audience: DefaultAudience, now: time.Now, codes: &codeStore{}}, nil
}

func checkIssuerURL(issuerURL string) error {
	u, err := url.Parse(issuerURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("issuer URL %q must be an absolute http(s) URL such as http://127.0.0.1:8080%s", issuerURL, Path)
	}
	return nil
}

// URL is the issuer identifier (the iss of every token).
func (i *Issuer) URL() string { return i.url }

// KeyID is the kid of the signing key.
func (i *Issuer) KeyID() string { return i.key.KeyID }

// WithAudience returns an issuer whose tokens default to audience aud.
func (i *Issuer) WithAudience(aud string) *Issuer {
	cp := *i
	cp.audience = aud
	return &cp
}

// WithClock returns an issuer that mints tokens as of now() (for tests and
// tools that need tokens valid at another time).
func (i *Issuer) WithClock(now func() time.Time) *Issuer {
	cp := *i
	cp.now = now
	return &cp
}

// PublicKeys is the JWKS document of the issuer.
func (i *Issuer) PublicKeys() jose.JSONWebKeySet {
	return jose.JSONWebKeySet{Keys: []jose.JSONWebKey{i.key.Public()}}
}

// TokenRequest describes a token to mint.
type TokenRequest struct {
	Tenant   string   // tenant_id claim; omitted when empty
	Subject  string   // sub claim; required
	Scopes   []string // joined with spaces into the scope claim
	Roles    []string // roles claim; omitted when empty
	Audience string   // aud claim; empty means the issuer's default audience
	Nonce    string   // nonce claim, of an ID token; omitted when empty
	TTL      time.Duration
}

type tokenClaims struct {
	jwt.Claims
	Tenant string   `json:"tenant_id,omitempty"`
	Scope  string   `json:"scope,omitempty"`
	Roles  []string `json:"roles,omitempty"`
	Nonce  string   `json:"nonce,omitempty"`
}

// Mint signs an access token (JWT with kid header; claims iss, sub, aud, iat,
// nbf, exp, jti, tenant_id, scope, roles). TTL 0 means DefaultTTL.
func (i *Issuer) Mint(req TokenRequest) (string, error) {
	if strings.TrimSpace(req.Subject) == "" {
		return "", errors.New("mint token: the subject is required")
	}
	if req.TTL < 0 {
		return "", fmt.Errorf("mint token: TTL %s is negative", req.TTL)
	}
	ttl := req.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	aud := req.Audience
	if aud == "" {
		aud = i.audience
	}
	scopes, err := cleanList("scope", req.Scopes)
	if err != nil {
		return "", err
	}
	roles, err := cleanList("role", req.Roles)
	if err != nil {
		return "", err
	}
	now := i.now()
	claims := tokenClaims{
		Claims: jwt.Claims{
			Issuer:    i.url,
			Subject:   req.Subject,
			Audience:  jwt.Audience{aud},
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			Expiry:    jwt.NewNumericDate(now.Add(ttl)),
			ID:        uuid.NewString(),
		},
		Tenant: req.Tenant,
		Scope:  strings.Join(scopes, " "),
		Roles:  roles,
		Nonce:  req.Nonce,
	}
	token, err := jwt.Signed(i.signer).Claims(claims).Serialize()
	if err != nil {
		return "", fmt.Errorf("mint token: %w", err)
	}
	return token, nil
}

// cleanList drops duplicates and rejects values that are empty or hold
// characters outside RFC 6749's scope-token set (spaces, quotes, backslash).
func cleanList(what string, in []string) ([]string, error) {
	var out []string
	for _, v := range in {
		if v == "" || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == '"' || r == '\\' || r > '~' }) {
			return nil, fmt.Errorf("mint token: invalid %s %q", what, v)
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}
