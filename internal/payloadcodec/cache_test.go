package payloadcodec

import (
	"crypto/cipher"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
)

func TestKeyCacheBoundAndExpiry(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	c := newKeyCache(2, time.Minute)
	c.now = func() time.Time { return now }
	var a cipher.AEAD

	c.put("k1", "acme", a)
	c.put("k1", "globex", a)
	_, ok := c.get("k1", "acme") // acme is now the most recent
	require.True(t, ok)
	c.put("k1", "initech", a)
	require.Equal(t, 2, c.len())
	_, ok = c.get("k1", "globex")
	require.False(t, ok, "the least recently used goes first")

	c.put("k2", "acme", a)
	c.forget("acme")
	require.Equal(t, 1, c.len())

	now = now.Add(time.Minute)
	_, ok = c.get("k1", "initech")
	require.False(t, ok, "expired")
	require.Equal(t, 0, c.len())
}

// A shredded scope stops decoding once its cached key expires, even when
// the process was not told.
func TestShreddingReachesCacheAfterTTL(t *testing.T) {
	t.Parallel()
	keys, err := NewKeyring("k1", map[string][]byte{"k1": GenerateKey()})
	require.NoError(t, err)
	secrets := NewMemorySecrets(true)
	e := New(keys, secrets, Options{CacheTTL: time.Minute})
	now := time.Now()
	e.cache.now = func() time.Time { return now }

	p, err := e.Codec("acme").Encode([]*commonpb.Payload{{Data: []byte("x")}})
	require.NoError(t, err)
	secrets.Delete("acme")
	_, err = e.Decoder().Decode(p)
	require.NoError(t, err)

	now = now.Add(time.Minute)
	_, err = e.Decoder().Decode(p)
	require.ErrorIs(t, err, ErrScopeShredded)
}
