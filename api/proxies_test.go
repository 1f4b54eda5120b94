package api_test

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func TestForwardedHeadersOnlyFromTrustedProxies(t *testing.T) {
	t.Parallel()
	selfLink := func(b *bundle) string {
		t.Helper()
		r := b.do(t, http.MethodGet, "/v1/jobs", b.readToken(t), nil, "X-Forwarded-Proto", "https")
		r.requireStatus(t, http.StatusOK)
		return r.object(t)["links"].(map[string]any)["self"].(string)
	}
	untrusted := setup(t)
	require.True(t, strings.HasPrefix(selfLink(untrusted), "http://"), "a client cannot make the gateway hand out https links")

	trusted := setupConfigured(t, storetest.SQLite, func(cfg *api.Config) {
		cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	require.True(t, strings.HasPrefix(selfLink(trusted), "https://"), "the proxy in front says the client used https")
}

func TestParseTrustedProxies(t *testing.T) {
	t.Parallel()
	got, err := api.ParseTrustedProxies(" 10.0.0.0/8, 192.168.1.7 ,::1,, fd00::/8")
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"),
		netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("fd00::/8"),
	}, got)
	_, err = api.ParseTrustedProxies("10.0.0.0/8, proxy.internal")
	require.Error(t, err)
}
