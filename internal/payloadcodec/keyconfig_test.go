package payloadcodec_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
)

var (
	b64key1 = base64.StdEncoding.EncodeToString(key1)
	b64key2 = base64.StdEncoding.EncodeToString(key2)
)

// requireSameKeys checks that got holds the keys of want under the same
// ids, by decoding with got what want encoded.
func requireSameKeys(t *testing.T, want map[string][]byte, got *payloadcodec.Keyring) {
	t.Helper()
	secrets := payloadcodec.NewMemorySecrets(true)
	reader := payloadcodec.New(got, secrets, payloadcodec.Options{})
	for id := range want {
		writer := payloadcodec.New(ring(t, id, want), secrets, payloadcodec.Options{})
		p := encode(t, writer.Codec("acme"), plain(t, id))[0]
		requireDecodes(t, reader.Decoder(), p, plain(t, id))
	}
}

// requireNoKeyMaterial checks that err names no key of the tests.
func requireNoKeyMaterial(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	for _, k := range [][]byte{key1, key2} {
		for _, form := range []string{string(k), base64.StdEncoding.EncodeToString(k), base64.RawURLEncoding.EncodeToString(k), base64.StdEncoding.EncodeToString(k[:16])} {
			require.NotContains(t, msg, form)
		}
	}
	require.NotContains(t, msg, b64key1[:12])
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	k, err := payloadcodec.ParseKeys("k2:" + b64key2 + ",k1:" + b64key1)
	require.NoError(t, err)
	require.Equal(t, "k2", k.Current())
	require.Equal(t, []string{"k1", "k2"}, k.IDs())
	requireSameKeys(t, map[string][]byte{"k1": key1, "k2": key2}, k)

	for name, s := range map[string]string{
		"spaces and a trailing comma": " 2026-01.a : " + b64key1 + " ,, ",
		"url-safe, unpadded":          "2026-01.a:" + base64.RawURLEncoding.EncodeToString(key1),
		"as FormatKey writes it":      payloadcodec.FormatKey("2026-01.a", key1),
	} {
		t.Run(name, func(t *testing.T) {
			k, err := payloadcodec.ParseKeys(s)
			require.NoError(t, err)
			require.Equal(t, "2026-01.a", k.Current())
			requireSameKeys(t, map[string][]byte{"2026-01.a": key1}, k)
		})
	}
}

func TestParseKeysErrors(t *testing.T) {
	t.Parallel()
	short := base64.StdEncoding.EncodeToString(key1[:16])
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"empty", "", []string{"no keys"}},
		{"only separators", " , ,", []string{"no keys"}},
		{"no id", "k1:" + b64key1 + "," + b64key2, []string{"entry 2", "id:base64key"}},
		{"empty id", ":" + b64key1, []string{"entry 1", "key id"}},
		{"key before id", b64key1 + ":k1", []string{"entry 1", "key id"}},
		{"id with a space", "k 1:" + b64key1, []string{"entry 1", "key id may only"}},
		{"not base64", "k1:" + b64key1[:20] + "!" + b64key1[21:], []string{"entry 1", `"k1"`, "not base64"}},
		{"16 bytes", "k1:" + b64key1 + ",k2:" + short, []string{"entry 2", `"k2"`, "16 bytes, not 32"}},
		{"duplicate id", "k1:" + b64key1 + ",k1:" + b64key2, []string{`"k1"`, "twice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := payloadcodec.ParseKeys(tc.in)
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
			requireNoKeyMaterial(t, err)
		})
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "payload-keys")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestLoadKeyFile(t *testing.T) {
	t.Parallel()
	path := writeFile(t, strings.Join([]string{
		"# payload keys, newest first",
		"",
		"k2:" + b64key2 + "\r",
		"   # k1: retired 2026-05, kept to read old histories",
		"k1:" + b64key1,
		"",
	}, "\n"))
	k, err := payloadcodec.LoadKeyFile(path)
	require.NoError(t, err)
	require.Equal(t, "k2", k.Current())
	requireSameKeys(t, map[string][]byte{"k1": key1, "k2": key2}, k)

	for _, tc := range []struct {
		name, content string
		want          []string
	}{
		{"comments only", "# nothing yet\n\n", []string{"no keys"}},
		{"bad line", "k2:" + b64key2 + "\n# note\nk1:" + b64key1[:40] + "\n", []string{"line 3", `"k1"`, "not 32"}},
		{"bare key", "\n" + b64key1 + "\n", []string{"line 2", "id:base64key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.content)
			_, err := payloadcodec.LoadKeyFile(path)
			require.Error(t, err)
			require.ErrorContains(t, err, path)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
			requireNoKeyMaterial(t, err)
		})
	}

	_, err = payloadcodec.LoadKeyFile(filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestNewKeyringErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		current string
		keys    map[string][]byte
		want    string
	}{
		{"no keys", "k1", nil, `current key "k1" is not in the keyring`},
		{"current missing", "k3", map[string][]byte{"k1": key1}, `"k3"`},
		{"short key", "k1", map[string][]byte{"k1": key1[:31]}, "31 bytes, not 32"},
		{"bad id", "k/1", map[string][]byte{"k/1": key1}, "key id may only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := payloadcodec.NewKeyring(tc.current, tc.keys)
			require.ErrorContains(t, err, tc.want)
			requireNoKeyMaterial(t, err)
		})
	}
}

func TestGenerateKey(t *testing.T) {
	t.Parallel()
	a, b := payloadcodec.GenerateKey(), payloadcodec.GenerateKey()
	require.Len(t, a, payloadcodec.KeySize)
	require.NotEqual(t, a, b)
	_, err := payloadcodec.ParseKeys(payloadcodec.FormatKey("dev", a))
	require.NoError(t, err)
}
