// Package webhooksign signs webhook requests the Standard Webhooks way
// (https://www.standardwebhooks.com) with an Ed25519 key: the signed
// content is "<webhook-id>.<webhook-timestamp>.<body>", and the
// webhook-signature header carries "v1a,<base64 signature>".
//
// Keys use the Standard Webhooks text forms: "whsk_" + base64 of the 32-byte
// seed for the secret key, "whpk_" + base64 of the 32-byte public key.
//
// It is also the one webhook sender's foundation (docs/webhooks.md): Post
// sends every webhook the gateway sends (job events, budget.threshold,
// batch.completed) with the same headers, limits and network guard;
// RetryAfter is the one retry schedule, which a job's workflow and the
// housekeeping sweeps (Send) follow alike.
package webhooksign

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Text forms of keys and the signature version of Ed25519 signatures.
const (
	SecretKeyPrefix = "whsk_"
	PublicKeyPrefix = "whpk_"
	Version         = "v1a"
)

// DefaultTolerance is how far a webhook-timestamp may be from the receiver's
// clock, either way.
const DefaultTolerance = 5 * time.Minute

// Verification failures.
var (
	ErrNoSignature     = errors.New("webhooksign: no v1a signature matches")
	ErrBadTimestamp    = errors.New("webhooksign: webhook-timestamp is not a Unix time in seconds")
	ErrTimestampTooOld = errors.New("webhooksign: webhook-timestamp is too old")
	ErrTimestampTooNew = errors.New("webhooksign: webhook-timestamp is too far in the future")
)

// Signer signs webhook requests with one Ed25519 key.
type Signer struct {
	priv  ed25519.PrivateKey
	pub   ed25519.PublicKey
	keyID string
}

// NewSigner builds a signer from a 32-byte Ed25519 seed.
func NewSigner(seed []byte) (*Signer, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("webhooksign: the signing key must be a %d-byte Ed25519 seed, not %d bytes", ed25519.SeedSize, len(seed))
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	return &Signer{priv: priv, pub: pub, keyID: KeyID(pub)}, nil
}

// GenerateSeed returns a new random Ed25519 seed.
func GenerateSeed() ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, err
	}
	return priv.Seed(), nil
}

// Sign returns the webhook-signature header value for a message.
func (s *Signer) Sign(msgID string, timestamp time.Time, body []byte) string {
	sig := ed25519.Sign(s.priv, signedContent(msgID, strconv.FormatInt(timestamp.Unix(), 10), body))
	return Version + "," + base64.StdEncoding.EncodeToString(sig)
}

// PublicKey is the key receivers verify signatures with.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.pub }

// KeyID is a short stable identifier of the key.
func (s *Signer) KeyID() string { return s.keyID }

// KeyID is the first 16 characters of the unpadded base64url SHA-256 of a
// public key.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return base64.RawURLEncoding.EncodeToString(sum[:])[:16]
}

// Verify checks a webhook request: that one of the space-separated entries
// of signatureHeader is a v1a signature of msgID, timestamp and body by pub,
// and that timestamp is within tolerance of now (DefaultTolerance when
// tolerance is 0).
func Verify(pub ed25519.PublicKey, msgID, timestamp string, body []byte, signatureHeader string, now time.Time, tolerance time.Duration) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("webhooksign: the public key must be %d bytes, not %d", ed25519.PublicKeySize, len(pub))
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	secs, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrBadTimestamp
	}
	sent := time.Unix(secs, 0)
	switch {
	case now.Sub(sent) > tolerance:
		return ErrTimestampTooOld
	case sent.Sub(now) > tolerance:
		return ErrTimestampTooNew
	}
	content := signedContent(msgID, timestamp, body)
	for _, entry := range strings.Fields(signatureHeader) {
		version, encoded, ok := strings.Cut(entry, ",")
		if !ok || version != Version {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil || len(sig) != ed25519.SignatureSize {
			continue
		}
		if ed25519.Verify(pub, content, sig) {
			return nil
		}
	}
	return ErrNoSignature
}

// signedContent is "<msgID>.<timestamp>.<body>".
func signedContent(msgID, timestamp string, body []byte) []byte {
	out := make([]byte, 0, len(msgID)+len(timestamp)+len(body)+2)
	out = append(out, msgID...)
	out = append(out, '.')
	out = append(out, timestamp...)
	out = append(out, '.')
	return append(out, body...)
}

// EncodePublicKey is the "whpk_" text form of a public key.
func EncodePublicKey(pub ed25519.PublicKey) string {
	return PublicKeyPrefix + base64.StdEncoding.EncodeToString(pub)
}

// DecodePublicKey parses the "whpk_" text form of a public key.
func DecodePublicKey(s string) (ed25519.PublicKey, error) {
	raw, ok := strings.CutPrefix(strings.TrimSpace(s), PublicKeyPrefix)
	if !ok {
		return nil, fmt.Errorf("webhooksign: a public key starts with %q", PublicKeyPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(key) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("webhooksign: a public key is %q followed by the base64 of %d bytes", PublicKeyPrefix, ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(key), nil
}

// EncodeSecretKey is the "whsk_" text form of a seed.
func EncodeSecretKey(seed []byte) string {
	return SecretKeyPrefix + base64.StdEncoding.EncodeToString(seed)
}

// DecodeSecretKey parses the "whsk_" text form of a seed.
func DecodeSecretKey(s string) ([]byte, error) {
	raw, ok := strings.CutPrefix(strings.TrimSpace(s), SecretKeyPrefix)
	if !ok {
		return nil, fmt.Errorf("webhooksign: a signing key starts with %q", SecretKeyPrefix)
	}
	seed, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("webhooksign: a signing key is %q followed by the base64 of a %d-byte Ed25519 seed (e.g. %s$(openssl rand -base64 32))", SecretKeyPrefix, ed25519.SeedSize, SecretKeyPrefix)
	}
	return seed, nil
}

// DeriveKey returns a 32-byte key for another purpose than signing
// webhooks (HKDF-SHA256 of the seed, with purpose as its info), so that
// every process holding the signing key shares it without storing more.
func (s *Signer) DeriveKey(purpose string) ([]byte, error) {
	return hkdf.Key(sha256.New, s.priv.Seed(), nil, purpose, 32)
}
