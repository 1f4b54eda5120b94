package payloadcodec_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
)

func TestKeyCheckTellsKeysApart(t *testing.T) {
	t.Parallel()
	a := ring(t, "k1", map[string][]byte{"k1": key1, "k2": key2})
	b := ring(t, "k1", map[string][]byte{"k1": bytes.Clone(key1)})
	c := ring(t, "k1", map[string][]byte{"k1": key2})

	a1, err := a.KeyCheck("k1")
	require.NoError(t, err)
	b1, err := b.KeyCheck("k1")
	require.NoError(t, err)
	require.Equal(t, a1, b1, "the same key, the same check value")
	require.Len(t, a1, sha256.Size)
	c1, err := c.KeyCheck("k1")
	require.NoError(t, err)
	require.NotEqual(t, a1, c1, "another key under the same id, another value")
	a2, err := a.KeyCheck("k2")
	require.NoError(t, err)
	require.Equal(t, c1, a2, "the value is the key's, whatever its id")

	mac := hmac.New(sha256.New, key1)
	mac.Write([]byte("ai-job-gateway payload key check v1"))
	require.Equal(t, mac.Sum(nil), a1, "recorded values stay valid: the message is fixed")
	require.NotContains(t, string(a1), string(key1[:8]))

	_, err = a.KeyCheck("k9")
	require.ErrorIs(t, err, payloadcodec.ErrUnknownKey)
}

// memoryKeyChecks records check values as the store does: first writer
// wins.
type memoryKeyChecks struct {
	mu     sync.Mutex
	checks map[string][]byte
}

func (m *memoryKeyChecks) RecordKeyCheck(_ context.Context, id string, check []byte) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.checks[id]; !ok {
		m.checks[id] = bytes.Clone(check)
	}
	return m.checks[id], nil
}

func (m *memoryKeyChecks) RecordedKeyCheck(_ context.Context, id string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checks[id], nil
}

// TestCheckKeysRecordsNothing: CheckKeys compares with the recorded
// values, refuses another key under a recorded id, and records no id,
// returning those it could not check.
func TestCheckKeysRecordsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	checks := &memoryKeyChecks{checks: map[string][]byte{}}
	require.NoError(t, ring(t, "k1", map[string][]byte{"k1": key1}).VerifyKeys(ctx, checks))

	unrecorded, err := ring(t, "k2", map[string][]byte{"k1": key1, "k2": key2}).CheckKeys(ctx, checks)
	require.NoError(t, err, "an id never recorded is no error")
	require.Equal(t, []string{"k2"}, unrecorded)
	require.Len(t, checks.checks, 1, "and is not recorded")

	_, err = ring(t, "k2", map[string][]byte{"k1": key2, "k2": key2}).CheckKeys(ctx, checks)
	var mismatch *payloadcodec.KeyMismatchError
	require.ErrorAs(t, err, &mismatch)
	require.Equal(t, "k1", mismatch.ID)

	require.NoError(t, ring(t, "k2", map[string][]byte{"k1": key1, "k2": key1}).VerifyKeys(ctx, checks), "k2 is still free for the first process that encrypts")
	unrecorded, err = ring(t, "k2", map[string][]byte{"k1": key1, "k2": key1}).CheckKeys(ctx, checks)
	require.NoError(t, err)
	require.Empty(t, unrecorded)
}

func TestVerifyKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	checks := &memoryKeyChecks{checks: map[string][]byte{}}
	first := ring(t, "k1", map[string][]byte{"k1": key1})
	require.NoError(t, first.VerifyKeys(ctx, checks), "a key id never seen is recorded")
	require.Len(t, checks.checks, 1)
	require.NoError(t, ring(t, "k1", map[string][]byte{"k1": bytes.Clone(key1)}).VerifyKeys(ctx, checks), "the same key again")

	err := ring(t, "k1", map[string][]byte{"k1": key2}).VerifyKeys(ctx, checks)
	require.ErrorIs(t, err, payloadcodec.ErrKeyMismatch)
	var mismatch *payloadcodec.KeyMismatchError
	require.ErrorAs(t, err, &mismatch)
	require.Equal(t, "k1", mismatch.ID)
	require.Contains(t, err.Error(), `payload key "k1" is not the key the deployment recorded under that id`)
	requireNoKeyMaterial(t, err)

	rotated := ring(t, "k2", map[string][]byte{"k1": key1, "k2": key2})
	require.NoError(t, rotated.VerifyKeys(ctx, checks), "a new key id rotates in")
	require.Len(t, checks.checks, 2)
	err = ring(t, "k2", map[string][]byte{"k1": key2, "k2": key2}).VerifyKeys(ctx, checks)
	require.ErrorIs(t, err, payloadcodec.ErrKeyMismatch, "every key is checked, not only the current one")
}
