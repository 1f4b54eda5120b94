// Package payloadcodec encrypts Temporal payloads with AES-256-GCM, so that
// Temporal's database, history exports and UI hold no customer content in
// the clear; the codec server (Handler) decrypts them for operators.
//
// Encrypted: every payload a codec sees (workflow and activity inputs and
// results, signals, queries, memos), as the whole marshalled payload, its
// own metadata included. Plaintext: the encrypted payload's metadata
// (encoding "binary/encrypted", the key id and the scope, e.g. a tenant
// slug) and whatever Temporal does not pass through codecs: ids, workflow
// and activity types, task queues, search attributes, and failure
// messages unless the failure converter encodes them.
//
// The gateway's data converter (DataConverter) also leaves values of Go
// type string plaintext, so that workflow and activity summaries, which
// the SDK encodes as strings, stay readable: the rule is that no workflow
// or activity passes customer content as a bare string (inputs, results,
// signals and queries are structs; a job id may be a bare string, being
// metadata).
//
// A payload's data key is HKDF-SHA256 of the master key (by id, from a
// Keyring), salted with the scope's secret (from ScopeSecrets) and with the
// scope in the info. The data is a random 96-bit nonce followed by the
// ciphertext; the scope is the additional data. Deleting a scope's secret
// makes that scope's payloads undecodable (crypto-shredding).
package payloadcodec

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/ai-job-gateway/gateway/internal/ttlcache"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// The encoding and metadata keys of encrypted payloads.
const (
	EncodingEncrypted = "binary/encrypted"
	MetadataKeyID     = "encryption-key-id"
	MetadataScope     = "encryption-scope"
)

// hkdfInfo prefixes the scope in the HKDF info; changing it makes every
// existing payload undecodable.
const hkdfInfo = "ai-job-gateway payloadcodec v1\x00"

// Failures of Encode and Decode besides ErrUnknownKey and ErrScopeShredded.
var (
	ErrNoScope       = errors.New("no scope")
	ErrScopeMismatch = errors.New("payload of another scope")
	ErrDecrypt       = errors.New("payload does not decrypt (tampered with, or wrong key or scope)")
	// ErrSecretUnavailable: the scope's secret could not be read now (the
	// store failed or timed out); unlike ErrScopeShredded, it may pass.
	ErrSecretUnavailable = errors.New("scope secret unavailable")
)

// Defaults of Options.
const (
	DefaultCacheSize     = 1024
	DefaultCacheTTL      = 5 * time.Minute
	DefaultSecretTimeout = 5 * time.Second
)

// Options tune an Encryptor; zero fields take the defaults.
type Options struct {
	// CacheSize bounds the derived keys kept, one per key id and scope.
	CacheSize int
	// CacheTTL is how long a derived key is used before the scope's secret
	// is read again: how long a shredded scope stays decodable in a process
	// that was not told (Forget).
	CacheTTL time.Duration
	// SecretTimeout bounds one ScopeSecrets call (codecs get no context).
	SecretTimeout time.Duration

	now func() time.Time // the cache's clock (tests)
}

// Encryptor makes the codecs of one keyring and one set of scope secrets.
// It is safe for concurrent use.
type Encryptor struct {
	keys    *Keyring
	secrets ScopeSecrets
	timeout time.Duration
	cache   *ttlcache.Cache[cacheKey, cipher.AEAD] // by key id and scope
}

// New returns an Encryptor of keys and secrets.
func New(keys *Keyring, secrets ScopeSecrets, opts Options) *Encryptor {
	if keys == nil || secrets == nil {
		panic("payloadcodec.New: nil keyring or scope secrets")
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = DefaultCacheSize
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = DefaultCacheTTL
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	if opts.SecretTimeout <= 0 {
		opts.SecretTimeout = DefaultSecretTimeout
	}
	return &Encryptor{keys: keys, secrets: secrets, timeout: opts.SecretTimeout, cache: ttlcache.New[cacheKey, cipher.AEAD](opts.CacheTTL, opts.CacheSize, opts.now)}
}

// Codec encrypts payloads in scope with the current key, and decrypts
// payloads of that scope only (ErrScopeMismatch for others).
func (e *Encryptor) Codec(scope string) converter.PayloadCodec { return codec{e, scope} }

// Decoder decrypts payloads in the scope each one names, for the codec
// server and operators' tools. Its Encode fails with ErrNoScope.
func (e *Encryptor) Decoder() converter.PayloadCodec { return codec{e: e} }

// ReadOnly is e reading scope secrets without making any, sharing e's
// keys and cached data keys: the codec server's, so that no request makes
// a scope's secret (docs/operations.md, Codec server). A scope without a
// secret fails with ErrScopeShredded. It panics unless e's ScopeSecrets
// are ExistingSecrets too.
func (e *Encryptor) ReadOnly() *Encryptor {
	existing, ok := e.secrets.(ExistingSecrets)
	if !ok {
		panic(fmt.Sprintf("payloadcodec: ReadOnly: %T cannot read a secret without making it", e.secrets))
	}
	ro := *e
	ro.secrets = existingOnly{existing}
	return &ro
}

// Forget drops the cached data keys of a scope; call it after deleting the
// scope's secret so this process stops decoding the scope at once.
func (e *Encryptor) Forget(scope string) {
	for _, id := range e.keys.IDs() {
		e.cache.Forget(cacheKey{id, scope})
	}
}

// cacheKey names the cipher of a key id and a scope.
type cacheKey struct{ id, scope string }

// codec is Codec(scope), or Decoder when scope is "".
type codec struct {
	e     *Encryptor
	scope string
}

func (c codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	if c.scope == "" {
		return nil, fmt.Errorf("payloadcodec: encode: %w", ErrNoScope)
	}
	id := c.e.keys.Current()
	aead, err := c.e.aead(id, c.scope)
	if err != nil {
		return nil, fmt.Errorf("payloadcodec: encode: %w", err)
	}
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("payloadcodec: encode payload %d: %w", i, err)
		}
		// Already encrypted payloads are encrypted again, so Decode
		// always undoes Encode.
		nonce := randomBytes(aead.NonceSize())
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(EncodingEncrypted),
				MetadataKeyID:              []byte(id),
				MetadataScope:              []byte(c.scope),
			},
			Data: aead.Seal(nonce, nonce, plain, []byte(c.scope)),
		}
	}
	return out, nil
}

func (c codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != EncodingEncrypted {
			out[i] = p // never encrypted, e.g. recorded before encryption
			continue
		}
		d, err := c.e.decrypt(p, c.scope)
		if err != nil {
			return nil, fmt.Errorf("payloadcodec: decode payload %d: %w", i, err)
		}
		out[i] = d
	}
	return out, nil
}

// decrypt opens an encrypted payload; want, when set, is the only scope
// accepted.
func (e *Encryptor) decrypt(p *commonpb.Payload, want string) (*commonpb.Payload, error) {
	id, scope := string(p.Metadata[MetadataKeyID]), string(p.Metadata[MetadataScope])
	switch {
	case scope == "":
		return nil, ErrNoScope
	case want != "" && scope != want:
		return nil, fmt.Errorf("%w: %q, not %q", ErrScopeMismatch, scope, want)
	}
	aead, err := e.aead(id, scope)
	if err != nil {
		return nil, err
	}
	n := aead.NonceSize()
	if len(p.Data) < n+aead.Overhead() {
		return nil, fmt.Errorf("key %q, scope %q: %w", id, scope, ErrDecrypt)
	}
	plain, err := aead.Open(nil, p.Data[:n], p.Data[n:], []byte(scope))
	if err != nil {
		return nil, fmt.Errorf("key %q, scope %q: %w", id, scope, ErrDecrypt)
	}
	out := &commonpb.Payload{}
	if err := proto.Unmarshal(plain, out); err != nil {
		return nil, fmt.Errorf("key %q, scope %q: decrypted payload: %w", id, scope, err)
	}
	return out, nil
}

// aead is the cipher of a key id and scope, cached.
func (e *Encryptor) aead(id, scope string) (cipher.AEAD, error) {
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	return e.cache.Get(ctx, cacheKey{id, scope}, func(ctx context.Context) (cipher.AEAD, error) {
		master, err := e.keys.key(id)
		if err != nil {
			return nil, err
		}
		secret, err := e.secrets.Secret(ctx, scope)
		if err != nil && !errors.Is(err, ErrScopeShredded) {
			err = fmt.Errorf("%w: %w", ErrSecretUnavailable, err)
		}
		if err != nil {
			return nil, fmt.Errorf("secret of scope %q: %w", scope, err)
		}
		if len(secret) < MinSecretSize {
			return nil, fmt.Errorf("secret of scope %q: %d bytes, less than %d", scope, len(secret), MinSecretSize)
		}
		return newAEAD(master, secret, scope)
	})
}

// newAEAD derives the data key of a scope and makes its AES-256-GCM cipher.
func newAEAD(master, secret []byte, scope string) (cipher.AEAD, error) {
	key, err := hkdf.Key(sha256.New, master, secret, hkdfInfo+scope, KeySize)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
