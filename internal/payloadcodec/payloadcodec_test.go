package payloadcodec_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
)

var (
	key1 = payloadcodec.GenerateKey()
	key2 = payloadcodec.GenerateKey()
)

// setup is an Encryptor whose secrets know acme and globex.
type setup struct {
	enc     *payloadcodec.Encryptor
	secrets *payloadcodec.MemorySecrets
}

func newSetup(t *testing.T, current string, keys map[string][]byte) setup {
	t.Helper()
	secrets := payloadcodec.NewMemorySecrets(false)
	secrets.Create("acme")
	secrets.Create("globex")
	return setup{enc: payloadcodec.New(ring(t, current, keys), secrets, payloadcodec.Options{}), secrets: secrets}
}

func ring(t *testing.T, current string, keys map[string][]byte) *payloadcodec.Keyring {
	t.Helper()
	k, err := payloadcodec.NewKeyring(current, keys)
	require.NoError(t, err)
	return k
}

func plain(t *testing.T, v any) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	require.NoError(t, err)
	return p
}

func encode(t *testing.T, c converter.PayloadCodec, ps ...*commonpb.Payload) []*commonpb.Payload {
	t.Helper()
	out, err := c.Encode(ps)
	require.NoError(t, err)
	require.Len(t, out, len(ps))
	return out
}

func decodeOne(c converter.PayloadCodec, p *commonpb.Payload) (*commonpb.Payload, error) {
	out, err := c.Decode([]*commonpb.Payload{p})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

func requireDecodes(t *testing.T, c converter.PayloadCodec, encrypted, want *commonpb.Payload) {
	t.Helper()
	got, err := decodeOne(c, encrypted)
	require.NoError(t, err)
	require.True(t, proto.Equal(want, got), "decoded %v, want %v", got, want)
}

func meta(p *commonpb.Payload, key string) string { return string(p.GetMetadata()[key]) }

func TestRoundTripPerScope(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "k1", map[string][]byte{"k1": key1})
	for _, scope := range []string{"acme", "globex", "tenant with spaces/and:colons", "テナント"} {
		t.Run(scope, func(t *testing.T) {
			s.secrets.Create(scope)
			originals := []*commonpb.Payload{plain(t, "a prompt"), plain(t, map[string]int{"n": 1}), plain(t, nil), plain(t, []byte{0, 1, 2})}
			encrypted := encode(t, s.enc.Codec(scope), originals...)
			for i, p := range encrypted {
				require.Equal(t, payloadcodec.EncodingEncrypted, meta(p, converter.MetadataEncoding))
				require.Equal(t, "k1", meta(p, payloadcodec.MetadataKeyID))
				require.Equal(t, scope, meta(p, payloadcodec.MetadataScope))
				require.Len(t, p.Metadata, 3)
				requireDecodes(t, s.enc.Codec(scope), p, originals[i])
				requireDecodes(t, s.enc.Decoder(), p, originals[i])
			}
		})
	}
}

func TestCiphertextHidesContent(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "k1", map[string][]byte{"k1": key1})
	const secret = "patient Jane Doe, diagnosis: confidential"
	original := plain(t, secret)
	require.Contains(t, string(original.Data), secret)

	a, b := encode(t, s.enc.Codec("acme"), original)[0], encode(t, s.enc.Codec("acme"), original)[0]
	for _, p := range []*commonpb.Payload{a, b} {
		require.NotContains(t, string(p.Data), "Jane")
		for k, v := range p.Metadata {
			require.NotContains(t, string(v), "Jane", k)
			require.NotContains(t, string(v), "json/plain", k) // the original encoding is encrypted too
		}
	}
	require.NotEqual(t, a.Data, b.Data, "a fresh nonce per payload")
	require.False(t, bytes.Equal(a.Data[:12], b.Data[:12]))
}

func TestKeyRotation(t *testing.T) {
	t.Parallel()
	secrets := payloadcodec.NewMemorySecrets(true)
	before := payloadcodec.New(ring(t, "k1", map[string][]byte{"k1": key1}), secrets, payloadcodec.Options{})
	after := payloadcodec.New(ring(t, "k2", map[string][]byte{"k1": key1, "k2": key2}), secrets, payloadcodec.Options{})
	original := plain(t, "job input")

	old := encode(t, before.Codec("acme"), original)[0]
	require.Equal(t, "k1", meta(old, payloadcodec.MetadataKeyID))
	requireDecodes(t, after.Codec("acme"), old, original)

	fresh := encode(t, after.Codec("acme"), original)[0]
	require.Equal(t, "k2", meta(fresh, payloadcodec.MetadataKeyID))
	requireDecodes(t, after.Decoder(), fresh, original)

	_, err := decodeOne(before.Codec("acme"), fresh)
	require.ErrorIs(t, err, payloadcodec.ErrUnknownKey)
	require.ErrorContains(t, err, `"k2"`)
}

// withMeta is a copy of p with metadata key set to value.
func withMeta(p *commonpb.Payload, key, value string) *commonpb.Payload {
	c := proto.Clone(p).(*commonpb.Payload)
	if value == "" {
		delete(c.Metadata, key)
	} else {
		c.Metadata[key] = []byte(value)
	}
	return c
}

func TestWrongScope(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "k1", map[string][]byte{"k1": key1})
	p := encode(t, s.enc.Codec("acme"), plain(t, "acme's data"))[0]
	for _, tc := range []struct {
		name    string
		codec   converter.PayloadCodec
		payload *commonpb.Payload
		want    error
	}{
		{"read in another scope", s.enc.Codec("globex"), p, payloadcodec.ErrScopeMismatch},
		{"relabelled, scope-free decoder", s.enc.Decoder(), withMeta(p, payloadcodec.MetadataScope, "globex"), payloadcodec.ErrDecrypt},
		{"relabelled, codec of the new scope", s.enc.Codec("globex"), withMeta(p, payloadcodec.MetadataScope, "globex"), payloadcodec.ErrDecrypt},
		{"no scope", s.enc.Decoder(), withMeta(p, payloadcodec.MetadataScope, ""), payloadcodec.ErrNoScope},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeOne(tc.codec, tc.payload)
			require.ErrorIs(t, err, tc.want)
			require.NotContains(t, err.Error(), "acme's data")
		})
	}
}

func TestEncodeNeedsScope(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "k1", map[string][]byte{"k1": key1})
	for _, c := range []converter.PayloadCodec{s.enc.Decoder(), s.enc.Codec("")} {
		_, err := c.Encode([]*commonpb.Payload{plain(t, "x")})
		require.ErrorIs(t, err, payloadcodec.ErrNoScope)
	}
}

func TestShreddedScope(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "k1", map[string][]byte{"k1": key1})
	original := plain(t, "to be forgotten")
	acme := encode(t, s.enc.Codec("acme"), original)[0]
	globex := encode(t, s.enc.Codec("globex"), original)[0]

	s.secrets.Delete("acme")
	requireDecodes(t, s.enc.Decoder(), acme, original) // cached until Forget or CacheTTL
	s.enc.Forget("acme")

	_, err := decodeOne(s.enc.Decoder(), acme)
	require.ErrorIs(t, err, payloadcodec.ErrScopeShredded)
	require.ErrorContains(t, err, `"acme"`)
	_, err = s.enc.Codec("acme").Encode([]*commonpb.Payload{original})
	require.ErrorIs(t, err, payloadcodec.ErrScopeShredded)
	requireDecodes(t, s.enc.Decoder(), globex, original)

	s.secrets.Create("acme") // a new secret does not revive old payloads
	_, err = decodeOne(s.enc.Decoder(), acme)
	require.ErrorIs(t, err, payloadcodec.ErrDecrypt)
}

func TestUnencryptedPassThrough(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "k1", map[string][]byte{"k1": key1})
	zlib, err := converter.NewZlibCodec(converter.ZlibCodecOptions{AlwaysEncode: true}).Encode([]*commonpb.Payload{plain(t, "zipped")})
	require.NoError(t, err)
	payloads := []*commonpb.Payload{plain(t, "recorded before encryption"), plain(t, nil), {}, {Data: []byte("raw")}, zlib[0]}
	for _, c := range []converter.PayloadCodec{s.enc.Codec("acme"), s.enc.Decoder()} {
		out, err := c.Decode(payloads)
		require.NoError(t, err)
		require.Equal(t, payloads, out)
	}
}

func TestTamperedPayloads(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "k1", map[string][]byte{"k1": key1, "k2": key2})
	p := encode(t, s.enc.Codec("acme"), plain(t, "intact"))[0]
	flip := func(i int) func(*commonpb.Payload) {
		return func(c *commonpb.Payload) { c.Data[(i+len(c.Data))%len(c.Data)] ^= 1 }
	}
	for _, tc := range []struct {
		name   string
		change func(*commonpb.Payload)
		want   error
	}{
		{"nonce", flip(0), payloadcodec.ErrDecrypt},
		{"ciphertext", flip(14), payloadcodec.ErrDecrypt},
		{"tag", flip(-1), payloadcodec.ErrDecrypt},
		{"truncated", func(c *commonpb.Payload) { c.Data = c.Data[:len(c.Data)-1] }, payloadcodec.ErrDecrypt},
		{"shorter than a nonce and tag", func(c *commonpb.Payload) { c.Data = c.Data[:20] }, payloadcodec.ErrDecrypt},
		{"empty", func(c *commonpb.Payload) { c.Data = nil }, payloadcodec.ErrDecrypt},
		{"another held key", func(c *commonpb.Payload) { c.Metadata[payloadcodec.MetadataKeyID] = []byte("k2") }, payloadcodec.ErrDecrypt},
		{"unknown key", func(c *commonpb.Payload) { c.Metadata[payloadcodec.MetadataKeyID] = []byte("k9") }, payloadcodec.ErrUnknownKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := proto.Clone(p).(*commonpb.Payload)
			tc.change(c)
			_, err := decodeOne(s.enc.Decoder(), c)
			require.ErrorIs(t, err, tc.want)
		})
	}
	requireDecodes(t, s.enc.Decoder(), p, plain(t, "intact"))
}

func TestDataConverterRoundTrip(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "k1", map[string][]byte{"k1": key1})
	type jobInput struct {
		Prompt string
		Tokens int
		Tags   []string
	}
	in := jobInput{Prompt: "summarise this contract", Tokens: 512, Tags: []string{"legal"}}
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), s.enc.Codec("acme"))

	payloads, err := dc.ToPayloads(in, "second arg")
	require.NoError(t, err)
	for _, p := range payloads.Payloads {
		require.Equal(t, payloadcodec.EncodingEncrypted, meta(p, converter.MetadataEncoding))
		require.NotContains(t, string(p.Data), "contract")
	}
	var out jobInput
	var second string
	require.NoError(t, dc.FromPayloads(payloads, &out, &second))
	require.Equal(t, in, out)
	require.Equal(t, "second arg", second)

	// An operator's tool reads it without knowing the scope, and reads
	// what was written before encryption.
	tool := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), s.enc.Decoder())
	out = jobInput{}
	require.NoError(t, tool.FromPayload(payloads.Payloads[0], &out))
	require.Equal(t, in, out)
	out = jobInput{}
	require.NoError(t, tool.FromPayload(plain(t, in), &out))
	require.Equal(t, in, out)
}

// countingSecrets counts the Secret calls it passes on.
type countingSecrets struct {
	payloadcodec.ScopeSecrets
	calls atomic.Int32
}

func (c *countingSecrets) Secret(ctx context.Context, scope string) ([]byte, error) {
	c.calls.Add(1)
	return c.ScopeSecrets.Secret(ctx, scope)
}

func TestDerivedKeysAreCached(t *testing.T) {
	t.Parallel()
	secrets := &countingSecrets{ScopeSecrets: payloadcodec.NewMemorySecrets(true)}
	enc := payloadcodec.New(ring(t, "k1", map[string][]byte{"k1": key1}), secrets, payloadcodec.Options{})
	original := plain(t, "concurrent")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			c := enc.Codec(fmt.Sprintf("tenant-%d", i%2))
			for range 50 {
				p, err := c.Encode([]*commonpb.Payload{original})
				if assert.NoError(t, err) {
					got, err := decodeOne(enc.Decoder(), p[0])
					assert.NoError(t, err)
					assert.True(t, proto.Equal(original, got))
				}
			}
		})
	}
	wg.Wait()
	// Two scopes; concurrent first uses may each derive once.
	require.LessOrEqual(t, secrets.calls.Load(), int32(16))
}

func TestShortSecretRefused(t *testing.T) {
	t.Parallel()
	enc := payloadcodec.New(ring(t, "k1", map[string][]byte{"k1": key1}), shortSecrets{}, payloadcodec.Options{})
	_, err := enc.Codec("acme").Encode([]*commonpb.Payload{plain(t, "x")})
	require.ErrorContains(t, err, "less than 32")
}

type shortSecrets struct{}

func (shortSecrets) Secret(context.Context, string) ([]byte, error) { return make([]byte, 8), nil }
