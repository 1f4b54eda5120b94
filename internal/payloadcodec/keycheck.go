package payloadcodec

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
)

// keyCheckMessage is what a key check value authenticates; changing it
// makes every recorded check value differ.
const keyCheckMessage = "ai-job-gateway payload key check v1"

// ErrKeyMismatch: a key id names another key than the one the deployment
// recorded under it; VerifyKeys returns it as a *KeyMismatchError.
var ErrKeyMismatch = errors.New("payload key differs from the one recorded under its id")

// KeyMismatchError names the key id whose key differs, never the key.
type KeyMismatchError struct{ ID string }

func (e *KeyMismatchError) Error() string {
	return fmt.Sprintf("payload key %q is not the key the deployment recorded under that id: "+
		"histories encrypted with one could not be read with the other; give the same key, or a new key id "+
		"(docs/operations.md, Payload encryption)", e.ID)
}

// Is makes errors.Is match ErrKeyMismatch.
func (e *KeyMismatchError) Is(target error) bool { return target == ErrKeyMismatch }

// KeyCheck is the check value of the key id names: HMAC-SHA256 of a fixed
// message under the key. Equal keys have equal values; the value reveals
// nothing of the key (docs/operations.md, Payload encryption).
func (k *Keyring) KeyCheck(id string) ([]byte, error) {
	key, err := k.key(id)
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(keyCheckMessage))
	return mac.Sum(nil), nil
}

// KeyChecks records the check values of a deployment's payload keys, one
// per key id, shared by all its processes.
type KeyChecks interface {
	// RecordKeyCheck records check under id unless id has one already,
	// and returns the value recorded under id.
	RecordKeyCheck(ctx context.Context, id string, check []byte) ([]byte, error)
}

// RecordedKeyChecks reads the check values a deployment recorded.
type RecordedKeyChecks interface {
	// RecordedKeyCheck is the value recorded under id; nil when none is.
	RecordedKeyCheck(ctx context.Context, id string) ([]byte, error)
}

// CheckKeys is VerifyKeys that records nothing, for processes that only
// decrypt (jobs show, replay, webhooks): a key id could otherwise be
// bound for good to a key an operator merely tried. It returns the ids
// the deployment has not recorded, which it cannot check.
func (k *Keyring) CheckKeys(ctx context.Context, checks RecordedKeyChecks) (unrecorded []string, err error) {
	for _, id := range k.IDs() {
		mine, err := k.KeyCheck(id)
		if err != nil {
			return nil, err
		}
		recorded, err := checks.RecordedKeyCheck(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("payload key %q: read its check value: %w", id, err)
		}
		if recorded == nil {
			unrecorded = append(unrecorded, id)
			continue
		}
		if !hmac.Equal(mine, recorded) {
			return nil, &KeyMismatchError{ID: id}
		}
	}
	return unrecorded, nil
}

// VerifyKeys checks every key of the keyring against the deployment's
// recorded check values, recording those of ids never seen (only the
// processes that encrypt should: see CheckKeys); it fails
// with ErrKeyMismatch, naming the first key id whose key differs. A
// process that passes encrypts and decrypts as every other does.
func (k *Keyring) VerifyKeys(ctx context.Context, checks KeyChecks) error {
	for _, id := range k.IDs() {
		mine, err := k.KeyCheck(id)
		if err != nil {
			return err
		}
		recorded, err := checks.RecordKeyCheck(ctx, id, mine)
		if err != nil {
			return fmt.Errorf("payload key %q: record its check value: %w", id, err)
		}
		if !hmac.Equal(mine, recorded) {
			return &KeyMismatchError{ID: id}
		}
	}
	return nil
}
