package store

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// APIKey is a key the gateway issued (docs/api.md, API keys). The store
// keeps only the SHA-256 of its secret, and of the secret it replaced
// while a rotation's grace period lasts.
type APIKey struct {
	ID                 string `gorm:"primaryKey"`
	Tenant             string
	Name               string
	Scopes             []string `gorm:"serializer:json"`
	Application        *string
	SecretHash         []byte
	PreviousSecretHash []byte
	PreviousExpiresAt  *time.Time
	CreatedBy          string
	CreatedAt          time.Time
	ExpiresAt          *time.Time
	RevokedAt          *time.Time
	LastUsedAt         *time.Time
	Limits             KeyLimits `gorm:"serializer:json"`
}

func (APIKey) TableName() string { return "api_keys" }

// PreviousSecretUntil is when the secret a rotation replaced stops
// working, in UTC; nil when it no longer works at now, or there is none.
func (k *APIKey) PreviousSecretUntil(now time.Time) *time.Time {
	if k.PreviousExpiresAt == nil || !now.Before(*k.PreviousExpiresAt) {
		return nil
	}
	until := k.PreviousExpiresAt.UTC()
	return &until
}

// KeyLimits are an API key's limits; 0 is none (docs/api.md, API keys).
type KeyLimits struct {
	// RequestsPerMinute bounds the key's requests in each minute, across
	// every API process.
	RequestsPerMinute int `json:"requests_per_minute,omitempty"`
	// MaxInFlight bounds the key's jobs not yet finished, across every
	// API process.
	MaxInFlight int `json:"max_in_flight,omitempty"`
	// TokensPerMinute bounds the tokens of the key's llm-tasks in each
	// clock minute: estimated at create, settled to the real count.
	TokensPerMinute int `json:"tokens_per_minute,omitempty"`
}

// CreateAPIKey records a new key.
func (s *APIKeyStore) CreateAPIKey(ctx context.Context, k *APIKey) error {
	return s.write(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(k).Error; err != nil {
			return err
		}
		return audit(ctx, tx, AuditEntry{Tenant: k.Tenant, Action: "api_key.create", Target: "api-key/" + k.ID, After: k.audit()})
	})
}

// audit is what the audit log shows of k: never a secret's hash.
func (k *APIKey) audit() map[string]any {
	return map[string]any{"name": k.Name, "scopes": k.Scopes, "application": k.Application, "expires_at": k.ExpiresAt,
		"limits": k.Limits, "revoked_at": k.RevokedAt}
}

// APIKey reads key id, revoked or not, of any tenant: what a request's
// key is checked against. ErrNotFound when there is none.
func (s *APIKeyStore) APIKey(ctx context.Context, id string) (*APIKey, error) {
	return take[APIKey](s.db.WithContext(ctx).Where("id = ?", id))
}

// TenantAPIKey reads tenant's key id unless it was revoked; ErrNotFound
// otherwise.
func (s *APIKeyStore) TenantAPIKey(ctx context.Context, tenant, id string) (*APIKey, error) {
	return take[APIKey](s.db.WithContext(ctx).Where("id = ? AND tenant = ? AND revoked_at IS NULL", id, tenant))
}

// ListAPIKeys lists tenant's keys not revoked, newest first.
func (s *APIKeyStore) ListAPIKeys(ctx context.Context, tenant string) ([]APIKey, error) {
	var keys []APIKey
	err := s.db.WithContext(ctx).Where("tenant = ? AND revoked_at IS NULL", tenant).
		Order("created_at DESC, id DESC").Find(&keys).Error
	return keys, err
}

// RevokeAPIKey revokes tenant's key id at at; ErrNotFound when tenant has
// no such key not revoked.
func (s *APIKeyStore) RevokeAPIKey(ctx context.Context, tenant, id string, at time.Time) error {
	var revoked int64
	at = at.UTC().Truncate(time.Microsecond)
	err := s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&APIKey{}).Where("id = ? AND tenant = ? AND revoked_at IS NULL", id, tenant).
			Update("revoked_at", at)
		revoked = res.RowsAffected
		if res.Error != nil || revoked == 0 {
			return res.Error
		}
		return audit(ctx, tx, AuditEntry{Tenant: tenant, Action: "api_key.revoke", Target: "api-key/" + id,
			Before: map[string]any{"revoked_at": nil}, After: map[string]any{"revoked_at": at}})
	})
	if err == nil && revoked == 0 {
		return ErrNotFound
	}
	return err
}

// RotateAPIKey gives tenant's key id the secret of hash; the secret it had
// keeps working until previousUntil (none when nil). It returns the key
// rotated, ErrNotFound when tenant has no such key not revoked. Of two
// rotations at once, each replaces the secret the other left: the update
// is conditional on the secret read, and read again when it changed.
func (s *APIKeyStore) RotateAPIKey(ctx context.Context, tenant, id string, hash []byte, previousUntil *time.Time) (*APIKey, error) {
	for {
		k, err := take[APIKey](s.db.WithContext(ctx).Where("id = ? AND tenant = ? AND revoked_at IS NULL", id, tenant))
		if err != nil {
			return nil, err
		}
		old := k.SecretHash
		k.PreviousSecretHash, k.PreviousExpiresAt = nil, nil
		if previousUntil != nil {
			until := previousUntil.UTC()
			k.PreviousSecretHash, k.PreviousExpiresAt = old, &until
		}
		k.SecretHash = hash
		var updated int64
		err = s.write(ctx, func(tx *gorm.DB) error {
			res := tx.Model(&APIKey{}).Where("id = ? AND secret_hash = ? AND revoked_at IS NULL", id, old).
				Updates(map[string]any{"secret_hash": k.SecretHash, "previous_secret_hash": k.PreviousSecretHash,
					"previous_expires_at": k.PreviousExpiresAt})
			updated = res.RowsAffected
			if res.Error != nil || updated != 1 {
				return res.Error
			}
			// The secrets are never shown: the change is that there is
			// a new one, and until when the one before works.
			return audit(ctx, tx, AuditEntry{Tenant: tenant, Action: "api_key.rotate", Target: "api-key/" + id,
				Before: map[string]any{"secret": "previous"}, After: map[string]any{"secret": "new", "previous_secret_expires_at": k.PreviousExpiresAt}})
		})
		if err != nil || updated == 1 {
			return k, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// TouchAPIKey records that key id was used at at, unless a use within
// the minute before was recorded: one write a minute at most per key.
func (s *APIKeyStore) TouchAPIKey(ctx context.Context, id string, at time.Time) error {
	at = at.UTC()
	return s.writeStatement(ctx, func(tx *gorm.DB) error {
		return tx.Model(&APIKey{}).Where("id = ? AND (last_used_at IS NULL OR last_used_at < ?)", id, at.Add(-time.Minute)).
			Update("last_used_at", at).Error
	})
}
