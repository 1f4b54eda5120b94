package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
)

// payloadSecret is a scope's row in payload_secrets.
type payloadSecret struct {
	Scope      string `gorm:"primaryKey"`
	Secret     []byte
	CreatedAt  time.Time
	ShreddedAt *time.Time
}

func (payloadSecret) TableName() string { return "payload_secrets" }

// PayloadSecrets are the scopes' payload secrets in the store, shared by
// every process of the deployment (payloadcodec.ScopeSecrets).
type PayloadSecrets struct{ s *KeyStore }

// PayloadSecrets returns the store's payload secrets.
func (s *KeyStore) PayloadSecrets() PayloadSecrets { return PayloadSecrets{s} }

// Secret returns the scope's secret, creating it on the scope's first
// payload; a shredded scope has none (payloadcodec.ErrScopeShredded).
func (p PayloadSecrets) Secret(ctx context.Context, scope string) ([]byte, error) {
	db := p.s.db.WithContext(ctx)
	secret := make([]byte, payloadcodec.MinSecretSize)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	err := db.Clauses(clause.OnConflict{DoNothing: true}).
		Create(&payloadSecret{Scope: scope, Secret: secret, CreatedAt: time.Now().UTC()}).Error
	if err != nil {
		return nil, err
	}
	return p.ExistingSecret(ctx, scope)
}

// ExistingSecret is Secret without making one: a scope never used has
// none (payloadcodec.ExistingSecrets, the codec server's).
func (p PayloadSecrets) ExistingSecret(ctx context.Context, scope string) ([]byte, error) {
	var row payloadSecret
	err := p.s.db.WithContext(ctx).Where("scope = ?", scope).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return nil, fmt.Errorf("scope %q has no secret: %w", scope, payloadcodec.ErrScopeShredded)
	case err != nil:
		return nil, err
	case row.ShreddedAt != nil || len(row.Secret) == 0:
		return nil, fmt.Errorf("scope %q is shredded: %w", scope, payloadcodec.ErrScopeShredded)
	}
	return row.Secret, nil
}

// Shred deletes the scope's secret, keeping the row so that it is never
// made again: the scope's payloads can no longer be decrypted.
func (p PayloadSecrets) Shred(ctx context.Context, scope string, at time.Time) error {
	at = at.UTC()
	return p.s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "scope"}},
		DoUpdates: clause.Assignments(map[string]any{"secret": nil, "shredded_at": at}),
	}).Create(&payloadSecret{Scope: scope, CreatedAt: at, ShreddedAt: &at}).Error
}

// JobTenant is the tenant of a job, deleted or not, "" for a job the
// store does not hold.
func (s *KeyStore) JobTenant(ctx context.Context, id string) (string, error) {
	var tenant string
	err := s.db.WithContext(ctx).Table("jobs").Select("tenant").Where("id = ?", id).Take(&tenant).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		// A deleted job's erasure still encrypts in its tenant's scope.
		err = s.db.WithContext(ctx).Table("job_tombstones").Select("tenant").Where("id = ?", id).Take(&tenant).Error
	}
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", nil
	}
	return tenant, err
}
