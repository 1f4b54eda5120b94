package vendorcallback_test

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/vendorcallback"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
)

func tokens(t *testing.T, seedByte byte) *vendorcallback.Tokens {
	t.Helper()
	seed := make([]byte, 32)
	seed[0] = seedByte
	signer, err := webhooksign.NewSigner(seed)
	require.NoError(t, err)
	tk, err := vendorcallback.NewTokens(signer)
	require.NoError(t, err)
	return tk
}

func TestTokenIsValidForItsJobAndAttemptOnly(t *testing.T) {
	t.Parallel()
	tk := tokens(t, 1)
	const job = "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f"
	token := tk.Token(job, 2)
	require.True(t, tk.Valid(job, 2, token))
	require.Equal(t, token, tk.Token(job, 2), "tokens are stable, so a vendor's retried post is accepted")

	require.False(t, tk.Valid(job, 1, token), "another attempt")
	require.False(t, tk.Valid("0195a3c4-7b1e-7c2d-9e3f-000000000000", 2, token), "another job")
	require.False(t, tk.Valid(job, 2, ""), "no token")
	require.False(t, tk.Valid(job, 2, token[:len(token)-1]), "a truncated token")
	require.False(t, tokens(t, 2).Valid(job, 2, token), "another gateway's key")
}

func TestAddressesCarryTheTokenUnderTheBase(t *testing.T) {
	t.Parallel()
	tk := tokens(t, 1)
	addrs, err := vendorcallback.NewAddresses("https://gw.example.com/", tk)
	require.NoError(t, err)
	raw := addrs.URL("job-1", 3)
	u, err := url.Parse(raw)
	require.NoError(t, err)
	require.Equal(t, "gw.example.com", u.Host)
	require.Equal(t, "/v1/provider-callbacks/job-1/3", u.Path)
	require.True(t, tk.Valid("job-1", 3, u.Query().Get("token")))

	for _, bad := range []string{"", "gw.example.com", "ftp://gw.example.com", "https://", "https://gw.example.com/?a=b"} {
		_, err := vendorcallback.NewAddresses(bad, tk)
		require.Error(t, err, bad)
	}
}
