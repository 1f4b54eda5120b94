package payloadcodec

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// MinSecretSize is the least size of a scope secret.
const MinSecretSize = 32

// ErrScopeShredded: the scope's secret was deleted or never existed, so
// its payloads can no longer be decrypted (nor new ones encrypted).
var ErrScopeShredded = errors.New("scope secret deleted or unknown")

// ScopeSecrets holds one random secret per scope, mixed into the scope's
// data keys. Deleting a scope's secret crypto-shreds the scope's payloads.
type ScopeSecrets interface {
	// Secret returns the scope's secret, at least MinSecretSize bytes, or
	// an error wrapping ErrScopeShredded when the scope has none. Other
	// errors are taken as passing (the payload fails and may be retried).
	Secret(ctx context.Context, scope string) ([]byte, error)
}

// ExistingSecrets reads scope secrets without ever making one (see
// Encryptor.ReadOnly).
type ExistingSecrets interface {
	// ExistingSecret is Secret for a scope that has a secret already; a
	// scope that has none, shredded or never made, fails with
	// ErrScopeShredded and still has none after.
	ExistingSecret(ctx context.Context, scope string) ([]byte, error)
}

// existingOnly is the ScopeSecrets of a read-only Encryptor.
type existingOnly struct{ ExistingSecrets }

func (s existingOnly) Secret(ctx context.Context, scope string) ([]byte, error) {
	return s.ExistingSecret(ctx, scope)
}

// MemorySecrets is a ScopeSecrets in memory, for tests and development: its
// secrets die with the process, and two processes do not share them.
type MemorySecrets struct {
	mu         sync.Mutex
	secrets    map[string][]byte
	deleted    map[string]bool
	autoCreate bool
}

// NewMemorySecrets returns an empty MemorySecrets. With autoCreate, a scope
// never seen before gets a new secret on first use; a deleted scope does
// not, until Create.
func NewMemorySecrets(autoCreate bool) *MemorySecrets {
	return &MemorySecrets{secrets: map[string][]byte{}, deleted: map[string]bool{}, autoCreate: autoCreate}
}

// Secret implements ScopeSecrets.
func (m *MemorySecrets) Secret(_ context.Context, scope string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.secrets[scope]; ok {
		return slices.Clone(s), nil
	}
	if !m.autoCreate || m.deleted[scope] {
		return nil, ErrScopeShredded
	}
	return slices.Clone(m.create(scope)), nil
}

// ExistingSecret implements ExistingSecrets.
func (m *MemorySecrets) ExistingSecret(_ context.Context, scope string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.secrets[scope]; ok {
		return slices.Clone(s), nil
	}
	return nil, ErrScopeShredded
}

// Create gives the scope a new secret if it has none, deleted or not.
func (m *MemorySecrets) Create(scope string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.secrets[scope]; !ok {
		m.create(scope)
	}
}

// Delete forgets the scope's secret: its payloads become undecodable.
func (m *MemorySecrets) Delete(scope string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.secrets, scope)
	m.deleted[scope] = true
}

func (m *MemorySecrets) create(scope string) []byte {
	s := randomBytes(MinSecretSize)
	m.secrets[scope] = s
	delete(m.deleted, scope)
	return s
}
