package payloadcodec

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
)

// A shredded scope stops decoding once its cached key expires, even when
// the process was not told.
func TestShreddingReachesCacheAfterTTL(t *testing.T) {
	t.Parallel()
	keys, err := NewKeyring("k1", map[string][]byte{"k1": GenerateKey()})
	require.NoError(t, err)
	secrets := NewMemorySecrets(true)
	now := time.Now()
	e := New(keys, secrets, Options{CacheTTL: time.Minute, now: func() time.Time { return now }})

	p, err := e.Codec("acme").Encode([]*commonpb.Payload{{Data: []byte("x")}})
	require.NoError(t, err)
	secrets.Delete("acme")
	_, err = e.Decoder().Decode(p)
	require.NoError(t, err)

	now = now.Add(time.Minute)
	_, err = e.Decoder().Decode(p)
	require.ErrorIs(t, err, ErrScopeShredded)
}
