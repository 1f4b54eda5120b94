// Package apikeys issues, checks, rotates and revokes the keys the gateway
// issues itself, so that a team can call it without an identity provider
// (docs/api.md, API keys). A key is "gwk_<id>_<secret>": the id finds its
// row, and only the secret's SHA-256 is kept, compared in constant time.
// The secret ends in a tag of the id, an HMAC of a key every process of
// the deployment derives, so that a made-up key is refused without
// reading the store.
package apikeys

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/ttlcache"
	"github.com/ai-job-gateway/gateway/store"
)

// Store keeps the keys (store.APIKeyStore).
type Store interface {
	CreateAPIKey(ctx context.Context, k *store.APIKey) error
	APIKey(ctx context.Context, id string) (*store.APIKey, error)
	TenantAPIKey(ctx context.Context, tenant, id string) (*store.APIKey, error)
	ListAPIKeys(ctx context.Context, tenant string) ([]store.APIKey, error)
	RevokeAPIKey(ctx context.Context, tenant, id string, at time.Time) error
	RotateAPIKey(ctx context.Context, tenant, id string, hash []byte, previousUntil *time.Time) (*store.APIKey, error)
	TouchAPIKey(ctx context.Context, id string, at time.Time) error
}

// Prefix starts every key, so that a key is told from a JWT at a glance
// (and by secret scanners).
const Prefix = "gwk_"

// A key's parts: the id is idLength characters of encoding (10 random
// bytes), the secret secretLength (28 random bytes and a tag of tagLength).
const (
	idLength     = 16
	secretLength = 52
	tagLength    = 4
)

// KeySource derives keys from the webhook signing key
// (*webhooksign.Signer is one), which every process of a deployment holds.
type KeySource interface {
	DeriveKey(purpose string) ([]byte, error)
}

// tagPurpose derives the tag key from the webhook signing key.
const tagPurpose = "ai-job-gateway api key id v1"

// Tags tag keys' ids: the last tagLength bytes of a secret are an HMAC of
// its key's id, which a made-up key does not have.
type Tags struct{ key []byte }

// NewTags derives the tag key from src.
func NewTags(src KeySource) (*Tags, error) {
	key, err := src.DeriveKey(tagPurpose)
	if err != nil {
		return nil, fmt.Errorf("apikeys: derive the tag key: %w", err)
	}
	return &Tags{key: key}, nil
}

// TagsOf tags with key itself (tests).
func TagsOf(key []byte) *Tags { return &Tags{key: key} }

// of is id's tag.
func (t *Tags) of(id string) []byte {
	mac := hmac.New(sha256.New, t.key)
	mac.Write([]byte(id))
	return mac.Sum(nil)[:tagLength]
}

// MaxGrace bounds how long a rotated-out secret keeps working.
const MaxGrace = 24 * time.Hour

// checkedFor is how long a key checked is taken as valid without reading
// it again: a key revoked is refused by every process within it.
const checkedFor = 500 * time.Millisecond

var encoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Identity is who a valid key speaks for.
type Identity struct {
	KeyID       string
	Tenant      string
	Scopes      []string
	Application *string
	Limits      store.KeyLimits
}

// Rates counts a key's requests in per-minute windows shared by every
// process (store.RoutingStore's rate counters).
type Rates interface {
	ReserveRate(ctx context.Context, key string, counter jobs.ServiceID, perMinute, perDay int, now time.Time) (bool, error)
}

// LimitError refuses a request over one of its key's limits, until
// RetryAfter has passed.
type LimitError struct {
	Limit      string // the limit's name, as the key's limits spell it
	Max        int
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("this API key's %s is %d; retry after the Retry-After seconds", e.Limit, e.Max)
}

// Subject is how the key is recorded wherever a token's sub is.
func (id Identity) Subject() string { return Subject(id.KeyID) }

// Subject is how key id is recorded as a caller: "key:<id>".
func Subject(id string) string { return jobs.KeyCaller(id) }

// InvalidError refuses a key: malformed, unknown, revoked, expired or
// with the wrong secret. Reason never repeats the key.
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return "api key refused: " + e.Reason }

// ScopeError refuses a new key a scope its creator does not hold.
type ScopeError struct{ Scope string }

func (e *ScopeError) Error() string {
	return fmt.Sprintf("the scope %q is not one of the caller's: a key gets, and is rotated by, only callers holding its scopes", e.Scope)
}

// notForKeys are scopes a key never holds: a key administers no keys (a
// key minting keys would shed its own limits, application and expiry) and
// acts for its own tenant only.
var notForKeys = []string{"keys:write", "admin:cross-tenant", "admin:codec"}

// ReservedScopeError refuses a new key a scope keys never hold.
type ReservedScopeError struct{ Scope string }

func (e *ReservedScopeError) Error() string {
	return fmt.Sprintf("the scope %q is not for API keys: keys are managed, and other tenants reached, with a token", e.Scope)
}

// ErrOtherTenant refuses a new key for another tenant than its creator's
// unless the creator is a super-admin.
var ErrOtherTenant = errors.New("only a super-admin may issue a key for another tenant")

// Service issues and checks keys.
type Service struct {
	store   Store
	rates   Rates
	tags    *Tags
	now     func() time.Time
	checked *ttlcache.Cache[[32]byte, Identity]
	logger  *slog.Logger
}

// New builds a Service over st, whose keys' request rates rates counts,
// and whose secrets tags tags; now may be nil (time.Now), and rates nil
// when no key has limits (tests).
func New(st Store, rates Rates, tags *Tags, now func() time.Time, logger *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Service{store: st, rates: rates, tags: tags, now: now, checked: ttlcache.New[[32]byte, Identity](checkedFor, 10_000, now), logger: logger}
}

// Creator is who asks for a new key.
type Creator struct {
	Subject    string
	Tenant     string
	Scopes     []string
	SuperAdmin bool
}

// NewKey is what a new key is to be; the API checked its fields.
type NewKey struct {
	Name        string
	Scopes      []string
	Application *string
	ExpiresAt   *time.Time
	// Tenant is the key's tenant; "" is the creator's.
	Tenant string
	Limits store.KeyLimits
}

// Issued is a key with its secret, which is shown this once.
type Issued struct {
	Key    store.APIKey
	Secret string
}

// Issue makes a key for by: its scopes a subset of by's, its tenant by's
// unless by is a super-admin.
func (s *Service) Issue(ctx context.Context, by Creator, k NewKey) (Issued, error) {
	tenant := k.Tenant
	if tenant == "" {
		tenant = by.Tenant
	}
	if tenant != by.Tenant && !by.SuperAdmin {
		return Issued{}, ErrOtherTenant
	}
	for _, scope := range k.Scopes {
		if slices.Contains(notForKeys, scope) {
			return Issued{}, &ReservedScopeError{Scope: scope}
		}
		if !slices.Contains(by.Scopes, scope) {
			return Issued{}, &ScopeError{Scope: scope}
		}
	}
	id, err := random(10)
	if err != nil {
		return Issued{}, err
	}
	secret, err := s.secret(id)
	if err != nil {
		return Issued{}, err
	}
	hash := sha256.Sum256([]byte(secret))
	key := store.APIKey{ID: id, Tenant: tenant, Name: k.Name, Scopes: slices.Clone(k.Scopes), Application: k.Application,
		SecretHash: hash[:], CreatedBy: by.Subject, CreatedAt: s.now().UTC().Truncate(time.Microsecond), ExpiresAt: k.ExpiresAt, Limits: k.Limits}
	if err := s.store.CreateAPIKey(ctx, &key); err != nil {
		return Issued{}, err
	}
	return Issued{Key: key, Secret: Prefix + id + "_" + secret}, nil
}

// List is tenant's keys not revoked, newest first.
func (s *Service) List(ctx context.Context, tenant string) ([]store.APIKey, error) {
	return s.store.ListAPIKeys(ctx, tenant)
}

// Get is tenant's key id; store.ErrNotFound when tenant has none not
// revoked.
func (s *Service) Get(ctx context.Context, tenant, id string) (*store.APIKey, error) {
	return s.store.TenantAPIKey(ctx, tenant, id)
}

// Revoke revokes tenant's key id: every process refuses it within
// checkedFor. store.ErrNotFound when tenant has no such key.
func (s *Service) Revoke(ctx context.Context, tenant, id string) error {
	err := s.store.RevokeAPIKey(ctx, tenant, id, s.now())
	s.checked.Clear() // this process refuses it at once
	return err
}

// Rotate gives tenant's key id a new secret, for by, who must hold every
// scope of the key (or be a super-admin): the new secret is a key's
// whole power. The secret the key had keeps working for grace (at most
// MaxGrace; 0: not at all).
func (s *Service) Rotate(ctx context.Context, by Creator, tenant, id string, grace time.Duration) (Issued, error) {
	if grace < 0 || grace > MaxGrace {
		return Issued{}, fmt.Errorf("apikeys: a grace of %s is outside 0 to %s", grace, MaxGrace)
	}
	k, err := s.store.TenantAPIKey(ctx, tenant, id)
	if err != nil {
		return Issued{}, err
	}
	if !by.SuperAdmin {
		for _, scope := range k.Scopes {
			if !slices.Contains(by.Scopes, scope) {
				return Issued{}, &ScopeError{Scope: scope}
			}
		}
	}
	secret, err := s.secret(id)
	if err != nil {
		return Issued{}, err
	}
	var until *time.Time
	if grace > 0 {
		t := s.now().Add(grace).UTC()
		until = &t
	}
	hash := sha256.Sum256([]byte(secret))
	k, err = s.store.RotateAPIKey(ctx, tenant, id, hash[:], until)
	s.checked.Clear()
	if err != nil {
		return Issued{}, err
	}
	return Issued{Key: *k, Secret: Prefix + id + "_" + secret}, nil
}

// LooksLikeKey reports whether a bearer token is meant as a key.
func LooksLikeKey(token string) bool { return strings.HasPrefix(token, Prefix) }

// Authenticate checks a key and counts a request against its limits,
// and returns who it speaks for: an *InvalidError when it is refused, a
// *LimitError when the request is over a limit, another error when the
// store cannot say. A key found valid is not read again for checkedFor.
func (s *Service) Authenticate(ctx context.Context, raw string) (Identity, error) {
	keyID, secret, ok := parse(raw)
	if !ok {
		return Identity{}, &InvalidError{Reason: "the API key is malformed"}
	}
	if !s.tagged(keyID, secret) {
		// Made up, or of another deployment: no need to read the store.
		return Identity{}, &InvalidError{Reason: "the API key is not valid"}
	}
	id, err := s.checked.Get(ctx, sha256.Sum256([]byte(raw)), func(ctx context.Context) (Identity, error) {
		return s.check(ctx, keyID, secret)
	})
	if err != nil {
		return Identity{}, err
	}
	return id, s.admit(ctx, id)
}

// admit counts a request of id against its requests_per_minute.
func (s *Service) admit(ctx context.Context, id Identity) error {
	limit := id.Limits.RequestsPerMinute
	if limit <= 0 {
		return nil
	}
	if s.rates == nil {
		return errors.New("apikeys: a key has a request rate but the service counts none")
	}
	now := s.now().UTC()
	fits, err := s.rates.ReserveRate(ctx, Subject(id.KeyID), "request", limit, 0, now)
	if err != nil || fits {
		return err
	}
	// Until the next minute's window, in whole seconds rounded up.
	wait := (time.Minute - now.Sub(now.Truncate(time.Minute)) + time.Second - 1).Truncate(time.Second)
	return &LimitError{Limit: "requests_per_minute", Max: limit, RetryAfter: wait}
}

func (s *Service) check(ctx context.Context, id, secret string) (Identity, error) {
	k, err := s.store.APIKey(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return Identity{}, &InvalidError{Reason: "the API key is not valid"}
	}
	if err != nil {
		return Identity{}, err
	}
	now := s.now()
	hash := sha256.Sum256([]byte(secret))
	current := subtle.ConstantTimeCompare(hash[:], k.SecretHash) == 1
	previous := k.PreviousExpiresAt != nil && now.Before(*k.PreviousExpiresAt) &&
		subtle.ConstantTimeCompare(hash[:], k.PreviousSecretHash) == 1
	switch {
	case !current && !previous:
		return Identity{}, &InvalidError{Reason: "the API key is not valid"}
	case k.RevokedAt != nil:
		return Identity{}, &InvalidError{Reason: "the API key was revoked"}
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return Identity{}, &InvalidError{Reason: "the API key has expired"}
	}
	if k.LastUsedAt == nil || now.Sub(*k.LastUsedAt) >= time.Minute {
		if err := s.store.TouchAPIKey(ctx, id, now); err != nil {
			s.logger.Warn("record an API key's last use", "key", id, "error", err)
		}
	}
	return Identity{KeyID: k.ID, Tenant: k.Tenant, Scopes: k.Scopes, Application: k.Application, Limits: k.Limits}, nil
}

// parse splits a key into its id and secret, checking their form.
func parse(raw string) (id, secret string, ok bool) {
	rest, found := strings.CutPrefix(raw, Prefix)
	if !found || len(rest) != idLength+1+secretLength || rest[idLength] != '_' {
		return "", "", false
	}
	id, secret = rest[:idLength], rest[idLength+1:]
	if _, err := encoding.DecodeString(id); err != nil {
		return "", "", false
	}
	if _, err := encoding.DecodeString(secret); err != nil {
		return "", "", false
	}
	return id, secret, true
}

// random is n random bytes in encoding.
func random(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return encoding.EncodeToString(b), nil
}

// secret is a new secret for key id: random bytes, then id's tag.
func (s *Service) secret(id string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b[:32-tagLength]); err != nil {
		return "", err
	}
	copy(b[32-tagLength:], s.tags.of(id))
	return encoding.EncodeToString(b), nil
}

// tagged reports whether secret ends in id's tag.
func (s *Service) tagged(id, secret string) bool {
	b, err := encoding.DecodeString(secret)
	return err == nil && len(b) == 32 && hmac.Equal(b[32-tagLength:], s.tags.of(id))
}
