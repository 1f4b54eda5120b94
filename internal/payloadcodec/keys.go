package payloadcodec

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
)

// KeySize is the size of a master key: AES-256.
const KeySize = 32

// maxKeyIDLen keeps ids shorter than a base64 key (44 characters), so an
// entry written the wrong way round never has its key echoed as an id.
const maxKeyIDLen = 32

// ErrUnknownKey: a payload names a key id the keyring does not hold.
var ErrUnknownKey = errors.New("unknown key id")

// Keyring holds master keys by id. New payloads are encrypted with the
// current key; any held key decrypts the payloads that name it.
type Keyring struct {
	current string
	keys    map[string][]byte
}

// NewKeyring builds a keyring whose new payloads use the key current.
// Every key must be KeySize bytes.
func NewKeyring(current string, keys map[string][]byte) (*Keyring, error) {
	k := &Keyring{current: current, keys: make(map[string][]byte, len(keys))}
	for id, key := range keys {
		if err := checkKey(id, key); err != nil {
			return nil, fmt.Errorf("payloadcodec: %w", err)
		}
		k.keys[id] = slices.Clone(key)
	}
	if _, ok := k.keys[current]; !ok {
		return nil, fmt.Errorf("payloadcodec: the current key %q is not in the keyring", current)
	}
	return k, nil
}

// Current is the id of the key new payloads are encrypted with.
func (k *Keyring) Current() string { return k.current }

// IDs are the ids of all held keys, sorted.
func (k *Keyring) IDs() []string {
	ids := make([]string, 0, len(k.keys))
	for id := range k.keys {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (k *Keyring) key(id string) ([]byte, error) {
	key, ok := k.keys[id]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownKey, id)
	}
	return key, nil
}

// GenerateKey returns a new random master key.
func GenerateKey() []byte { return randomBytes(KeySize) }

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return b
}

// checkID accepts ids of letters, digits, '.', '_' and '-', at most
// maxKeyIDLen long. Its errors do not echo an invalid id.
func checkID(id string) error {
	if id == "" || len(id) > maxKeyIDLen {
		return fmt.Errorf("the key id must be 1 to %d characters", maxKeyIDLen)
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return errors.New("the key id may only hold letters, digits, '.', '_' and '-'")
		}
	}
	return nil
}

// checkKey checks an id and its key's size.
func checkKey(id string, key []byte) error {
	if err := checkID(id); err != nil {
		return err
	}
	if len(key) != KeySize {
		return fmt.Errorf("key %q is %d bytes, not %d", id, len(key), KeySize)
	}
	return nil
}
