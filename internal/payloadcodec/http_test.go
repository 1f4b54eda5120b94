package payloadcodec_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
)

// TestReadOnlyMakesNoSecret: the codec server's Encryptor decodes and
// encodes in the scopes that have a secret, and makes none for a scope
// without one, however auto-creating its secrets are.
func TestReadOnlyMakesNoSecret(t *testing.T) {
	t.Parallel()
	secrets := payloadcodec.NewMemorySecrets(true)
	enc := payloadcodec.New(ring(t, "k1", map[string][]byte{"k1": key1}), secrets, payloadcodec.Options{})
	ro := enc.ReadOnly()
	original := plain(t, "shown in the UI")

	sealed := encode(t, enc.Codec("acme"), original)[0]
	requireDecodes(t, ro.Decoder(), sealed, original)
	requireDecodes(t, enc.Decoder(), encode(t, ro.Codec("acme"), original)[0], original)

	// A payload of a scope this deployment never made a secret for.
	other := payloadcodec.New(ring(t, "k1", map[string][]byte{"k1": key1}), payloadcodec.NewMemorySecrets(true), payloadcodec.Options{})
	foreign := encode(t, other.Codec("globex"), original)[0]
	_, err := decodeOne(ro.Decoder(), foreign)
	require.ErrorIs(t, err, payloadcodec.ErrScopeShredded)
	_, err = ro.Codec("initech").Encode([]*commonpb.Payload{original})
	require.ErrorIs(t, err, payloadcodec.ErrScopeShredded)
	for _, scope := range []string{"globex", "initech"} {
		_, err = secrets.ExistingSecret(context.Background(), scope)
		require.ErrorIs(t, err, payloadcodec.ErrScopeShredded, "no secret made for %s", scope)
	}
}

func TestReadOnlyNeedsExistingSecrets(t *testing.T) {
	t.Parallel()
	enc := payloadcodec.New(ring(t, "k1", map[string][]byte{"k1": key1}), creatingOnly{}, payloadcodec.Options{})
	require.PanicsWithValue(t, "payloadcodec: ReadOnly: payloadcodec_test.creatingOnly cannot read a secret without making it", func() { enc.ReadOnly() })
}

// creatingOnly is a ScopeSecrets without ExistingSecret.
type creatingOnly struct{}

func (creatingOnly) Secret(context.Context, string) ([]byte, error) { return nil, nil }

func TestPayloadScope(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "k1", map[string][]byte{"k1": key1})
	original := plain(t, 42)
	scope, encrypted := payloadcodec.PayloadScope(encode(t, s.enc.Codec("acme"), original)[0])
	require.True(t, encrypted)
	require.Equal(t, "acme", scope)
	scope, encrypted = payloadcodec.PayloadScope(original)
	require.False(t, encrypted)
	require.Empty(t, scope)
}
