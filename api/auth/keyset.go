package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/sync/singleflight"
)

const (
	// keyRefetchInterval is the least time between two JWKS fetches.
	keyRefetchInterval = 15 * time.Second
	maxJWKSBytes       = 1 << 20
)

// keySet is the issuer's JWKS as an oidc.KeySet. go-oidc's RemoteKeySet
// fetches the JWKS again for every token whose kid it does not know, so
// made-up kids would each cost a request to the issuer. keySet fetches at
// most once per keyRefetchInterval (concurrent misses share the fetch) and
// rejects the misses in between without one. Signatures are checked by an
// oidc.StaticKeySet of the keys with the token's kid.
type keySet struct {
	url    string
	client *http.Client
	now    func() time.Time

	fetches singleflight.Group // concurrent misses share one fetch

	mu      sync.Mutex
	keys    []jose.JSONWebKey // public signing keys of the last good fetch
	fetched time.Time         // end of the last fetch; zero before the first
	err     error             // why the last fetch failed, nil if it did not
}

// keysUnavailableError is a token that could not be checked because the
// JWKS could not be fetched; the request may be retried after retryAfter.
type keysUnavailableError struct {
	err        error
	retryAfter time.Duration
}

func (e *keysUnavailableError) Error() string {
	return "the issuer's signing keys cannot be fetched: " + e.err.Error()
}

func (e *keysUnavailableError) Unwrap() error { return e.err }

// keyLookup records for one Verify what the key set found; go-oidc flattens
// a KeySet's error into a string, so it travels in the context instead.
type keyLookup struct {
	verified    bool                  // a key verified the signature
	unknownKey  bool                  // no key with the token's kid in the fetched set
	unavailable *keysUnavailableError // the key set could not be fetched
}

type keyLookupKey struct{}

var errRecentlyFetched = errors.New("the key set was fetched moments ago")

// VerifySignature implements oidc.KeySet.
func (s *keySet) VerifySignature(ctx context.Context, rawToken string) ([]byte, error) {
	lookup, _ := ctx.Value(keyLookupKey{}).(*keyLookup)
	if lookup == nil {
		lookup = &keyLookup{}
	}
	jws, err := jose.ParseSignedCompact(rawToken, joseAlgs())
	if err != nil {
		return nil, err
	}
	kid := ""
	if len(jws.Signatures) > 0 {
		kid = jws.Signatures[0].Header.KeyID
	}
	candidates := s.candidates(kid)
	if payload, err := verifyWith(ctx, rawToken, candidates); err == nil {
		lookup.verified = true
		return payload, nil
	}
	// A known kid with a bad signature is not a reason to refetch.
	if kid != "" && len(candidates) > 0 {
		return nil, errors.New("the signature does not match the key of its kid")
	}
	switch err := s.refresh(ctx); {
	case errors.Is(err, errRecentlyFetched):
	case err != nil:
		var unavailable *keysUnavailableError
		if !errors.As(err, &unavailable) {
			unavailable = &keysUnavailableError{err: err, retryAfter: keyRefetchInterval}
		}
		lookup.unavailable = unavailable
		return nil, unavailable
	default:
		candidates = s.candidates(kid)
		if payload, err := verifyWith(ctx, rawToken, candidates); err == nil {
			lookup.verified = true
			return payload, nil
		}
	}
	lookup.unknownKey = len(candidates) == 0
	return nil, errors.New("no key of the issuer's key set verifies the token")
}

// candidates are the cached keys with kid, or all of them for no kid.
func (s *keySet) candidates(kid string) []crypto.PublicKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []crypto.PublicKey
	for _, k := range s.keys {
		if kid == "" || k.KeyID == kid {
			out = append(out, k.Key)
		}
	}
	return out
}

func verifyWith(ctx context.Context, rawToken string, keys []crypto.PublicKey) ([]byte, error) {
	if len(keys) == 0 {
		return nil, errors.New("no candidate key")
	}
	return (&oidc.StaticKeySet{PublicKeys: keys}).VerifySignature(ctx, rawToken)
}

// refresh fetches the JWKS unless it was fetched less than
// keyRefetchInterval ago: then it answers errRecentlyFetched, or the
// failure of that fetch. Concurrent callers share one fetch.
func (s *keySet) refresh(ctx context.Context) error {
	s.mu.Lock()
	if !s.fetched.IsZero() {
		if wait := s.fetched.Add(keyRefetchInterval).Sub(s.now()); wait > 0 {
			err := s.err
			s.mu.Unlock()
			if err != nil {
				return &keysUnavailableError{err: err, retryAfter: wait}
			}
			return errRecentlyFetched
		}
	}
	s.mu.Unlock()

	done := s.fetches.DoChan("jwks", func() (any, error) { return nil, s.fetch() })
	select {
	case <-ctx.Done():
		return ctx.Err()
	case r := <-done:
		if r.Err != nil {
			return &keysUnavailableError{err: r.Err, retryAfter: keyRefetchInterval}
		}
		return nil
	}
}

// fetch downloads the key set, detached from any request like discovery,
// and records the outcome.
func (s *keySet) fetch() error {
	s.mu.Lock()
	if !s.fetched.IsZero() && s.now().Before(s.fetched.Add(keyRefetchInterval)) {
		// A fetch finished between the caller's look and this one.
		err := s.err
		s.mu.Unlock()
		return err
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), discoveryTimeout)
	defer cancel()
	keys, err := s.download(ctx)

	s.mu.Lock()
	defer s.mu.Unlock()
	// Stamped when the fetch ends: callers that looked while it ran join
	// it through the singleflight group instead of being turned away.
	s.fetched = s.now()
	if err == nil {
		s.keys = keys
	}
	s.err = err
	return err
}

// download reads the JWKS, keeping the public signing keys go-oidc can
// verify with and skipping keys it cannot parse (RFC 7517 section 5).
func (s *keySet) download(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the JWKS: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes))
	if err != nil {
		return nil, fmt.Errorf("reading the JWKS: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the JWKS %s: %s", s.url, resp.Status)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("decoding the JWKS %s: %w", s.url, err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if json.Unmarshal(raw, &k) != nil || (k.Use != "" && k.Use != "sig") {
			continue
		}
		switch k.Key.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
			keys = append(keys, k)
		}
	}
	return keys, nil
}
