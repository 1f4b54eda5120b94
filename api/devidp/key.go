package devidp

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	_ "crypto/sha256" // registers crypto.SHA256 for thumbprints
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	jose "github.com/go-jose/go-jose/v4"
)

const (
	stateDir   = "dev-oidc"
	keyFile    = "signing-key.json"
	issuerFile = "issuer"
	keyBits    = 2048
)

// loadOrCreateKey returns the signing key in dir, creating it on first use.
func loadOrCreateKey(dir string) (jose.JSONWebKey, error) {
	path := filepath.Join(dir, keyFile)
	key, err := readKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := createKey(dir, path); err != nil {
		return jose.JSONWebKey{}, err
	}
	// Read back what is on disk: when two processes race, both end up with the
	// key that won.
	return readKey(path)
}

// readKey loads and checks a private RSA signing key stored as a JWK.
func readKey(path string) (jose.JSONWebKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return jose.JSONWebKey{}, err
	}
	var key jose.JSONWebKey
	if err := json.Unmarshal(raw, &key); err != nil {
		return jose.JSONWebKey{}, fmt.Errorf("dev signing key %s is unreadable (%v); delete it to create a new one", path, err)
	}
	priv, ok := key.Key.(*rsa.PrivateKey)
	if !ok || !key.Valid() || priv.N.BitLen() < keyBits {
		return jose.JSONWebKey{}, fmt.Errorf("dev signing key %s is not a private RSA key of at least %d bits; delete it to create a new one", path, keyBits)
	}
	if key.KeyID == "" {
		if key.KeyID, err = keyID(key); err != nil {
			return jose.JSONWebKey{}, err
		}
	}
	key.Algorithm = string(jose.RS256)
	key.Use = "sig"
	return key, nil
}

// createKey generates a key and publishes it at path without ever replacing
// an existing file: the key is written to a temporary file and hard-linked
// into place, which fails if another process got there first.
func createKey(dir, path string) error {
	priv, err := rsa.GenerateKey(rand.Reader, keyBits)
	if err != nil {
		return fmt.Errorf("generate dev signing key: %w", err)
	}
	key := jose.JSONWebKey{Key: priv, Algorithm: string(jose.RS256), Use: "sig"}
	if key.KeyID, err = keyID(key); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(key, "", "  ")
	if err != nil {
		return fmt.Errorf("encode dev signing key: %w", err)
	}
	tmp, err := writeTemp(dir, ".signing-key-*", raw)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)

	err = os.Link(tmp, path)
	switch {
	case err == nil, errors.Is(err, fs.ErrExist):
		return nil
	default:
		// No hard links on this file system: fall back to a rename, which can
		// only lose a race that a concurrent first start would have to win
		// within the same instant.
		if _, statErr := os.Stat(path); statErr == nil {
			return nil
		}
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("store dev signing key: %w", err)
		}
		return nil
	}
}

// keyID is the RFC 7638 thumbprint of the public key.
func keyID(key jose.JSONWebKey) (string, error) {
	pub := key.Public()
	sum, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("dev signing key thumbprint: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}

// writeTemp writes data to a new synced 0600 file in dir and returns its path.
func writeTemp(dir, pattern string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", fmt.Errorf("write in %s: %w", dir, err)
	}
	name := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	return name, nil
}

// writeFileAtomic replaces path with data (temporary file + rename).
func writeFileAtomic(path string, data []byte) error {
	tmp, err := writeTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*", data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
