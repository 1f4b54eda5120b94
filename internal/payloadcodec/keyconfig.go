package payloadcodec

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ParseKeys reads keys from a value such as "k2:<base64>,k1:<base64>" (the
// form of GATEWAY_PAYLOAD_KEYS): comma-separated id:key entries, key in
// base64, the first entry being the current key. Errors name an entry by
// its position and id, never by its key.
func ParseKeys(s string) (*Keyring, error) {
	var entries []keyEntry
	for i, text := range strings.Split(s, ",") {
		if strings.TrimSpace(text) == "" {
			continue
		}
		e, err := parseEntry(text)
		if err != nil {
			return nil, fmt.Errorf("payloadcodec: key entry %d: %w", i+1, err)
		}
		entries = append(entries, e)
	}
	return keyringOf(entries, "payload keys")
}

// LoadKeyFile reads keys from a file with one id:key entry a line, in the
// form of ParseKeys; the first entry is the current key. Blank lines and
// lines starting with # are skipped.
func LoadKeyFile(path string) (*Keyring, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("payloadcodec: key file: %w", err)
	}
	var entries []keyEntry
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		e, err := parseEntry(line)
		if err != nil {
			return nil, fmt.Errorf("payloadcodec: key file %s line %d: %w", path, i+1, err)
		}
		entries = append(entries, e)
	}
	return keyringOf(entries, "key file "+path)
}

// FormatKey is the id:key entry of a key, as ParseKeys and LoadKeyFile read it.
func FormatKey(id string, key []byte) string {
	return id + ":" + base64.StdEncoding.EncodeToString(key)
}

type keyEntry struct {
	id  string
	key []byte
}

// parseEntry reads "id:base64key". Its errors name the id only when it is
// valid, and never the key.
func parseEntry(text string) (keyEntry, error) {
	id, encoded, ok := strings.Cut(strings.TrimSpace(text), ":")
	id, encoded = strings.TrimSpace(id), strings.TrimSpace(encoded)
	if !ok {
		return keyEntry{}, errors.New("not of the form id:base64key")
	}
	if err := checkID(id); err != nil {
		return keyEntry{}, err
	}
	key, ok := decodeBase64(encoded)
	if !ok {
		return keyEntry{}, fmt.Errorf("key %q is not base64", id)
	}
	if err := checkKey(id, key); err != nil {
		return keyEntry{}, err
	}
	return keyEntry{id: id, key: key}, nil
}

// keyringOf builds a keyring from parsed entries, the first one current.
func keyringOf(entries []keyEntry, source string) (*Keyring, error) {
	if len(entries) == 0 {
		return nil, fmt.Errorf("payloadcodec: %s: no keys", source)
	}
	keys := make(map[string][]byte, len(entries))
	for _, e := range entries {
		if _, dup := keys[e.id]; dup {
			return nil, fmt.Errorf("payloadcodec: %s: key id %q appears twice", source, e.id)
		}
		keys[e.id] = e.key
	}
	return NewKeyring(entries[0].id, keys)
}

// decodeBase64 accepts standard and URL-safe base64, padded or not.
func decodeBase64(s string) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	return nil, false
}
