package netguard_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/netguard"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr string
		want string
	}{
		// Public.
		{"8.8.8.8", ""},
		{"93.184.215.14", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"172.15.255.255", ""},
		{"172.32.0.0", ""},
		{"192.169.0.1", ""},
		{"169.253.255.255", ""},
		{"223.255.255.255", ""},
		{"2001:4860:4860::8888", ""},
		{"2606:4700::1111", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
		// Loopback.
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"64:ff9b::7f00:1", "loopback"},
		// Private: RFC 1918 and RFC 4193.
		{"10.0.0.1", "private"},
		{"10.255.255.255", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"::ffff:10.1.2.3", "private"},
		{"::ffff:192.168.0.1", "private"},
		{"fc00::1", "private"},
		{"fd12:3456:789a::1", "private"},
		{"fd00:ec2::254", "private"}, // AWS IPv6 instance metadata
		{"fec0::1", "private"},
		// Link-local.
		{"169.254.169.254", "link-local"}, // cloud instance metadata
		{"169.254.0.1", "link-local"},
		{"::ffff:169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"febf::1", "link-local"},
		// Unspecified and "this network".
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"::", "unspecified"},
		{"::ffff:0.0.0.0", "unspecified"},
		// Multicast.
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"ff02::1", "multicast"},
		{"ff05::2", "multicast"},
		{"::ffff:224.0.0.251", "multicast"},
		// Shared address space (carrier-grade NAT), RFC 6598.
		{"100.64.0.1", "shared (CGNAT)"},
		{"100.100.100.200", "shared (CGNAT)"}, // Alibaba Cloud metadata
		{"100.127.255.255", "shared (CGNAT)"},
		{"::ffff:100.64.0.1", "shared (CGNAT)"},
		// Reserved.
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "reserved"},
		{"::7f00:1", "reserved"}, // IPv4-compatible, deprecated
		// Special purpose: public neighbours of the ranges below.
		{"192.0.1.255", ""},
		{"198.17.255.255", ""},
		{"198.20.0.0", ""},
		{"203.0.112.255", ""},
		{"2001:200::1", ""}, // just past 2001::/23
		{"2003::1", ""},
		{"3ffe:ffff::1", ""},
		{"64:ff9b::c000:201", "documentation"}, // NAT64 of 192.0.2.1
		// Special purpose, IPv4.
		{"192.0.0.1", "reserved"},
		{"192.0.0.170", "reserved"},
		{"192.0.2.1", "documentation"},
		{"198.51.100.7", "documentation"},
		{"203.0.113.255", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"::ffff:198.18.0.1", "benchmarking"},
		// Special purpose, IPv6.
		{"2001::1", "tunnel (Teredo)"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "tunnel (Teredo)"},
		{"2002:7f00:1::1", "tunnel (6to4)"},  // 6to4 of 127.0.0.1
		{"2002:808:808::1", "tunnel (6to4)"}, // 6to4 of 8.8.8.8: refused all the same
		{"2001:2::1", "benchmarking"},
		{"2001:10::1", "reserved"}, // deprecated ORCHID
		{"2001:1ff::1", "reserved"},
		{"2001:db8::1", "documentation"},
		{"3fff::1", "documentation"},
		{"64:ff9b:1::a00:1", "reserved"}, // local-use NAT64, RFC 8215
		{"100::1", "reserved"},           // discard-only, RFC 6666
		{"5f00::1", "reserved"},          // SRv6 SIDs, RFC 9602
		{"4000::1", "reserved"},          // outside 2000::/3
	} {
		t.Run(tc.addr, func(t *testing.T) {
			t.Parallel()
			addr, err := netip.ParseAddr(tc.addr)
			require.NoError(t, err)
			require.Equal(t, tc.want, netguard.Classify(addr))
		})
	}
	require.Equal(t, "invalid", netguard.Classify(netip.Addr{}))
}

// receiver is a local HTTP server that counts the requests it gets.
func receiver(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	hits := new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, hits
}

// noContentReceiver is a receiver that answers 204 No Content, and its
// port.
func noContentReceiver(t *testing.T) (srv *httptest.Server, hits *atomic.Int32, port string) {
	t.Helper()
	srv, hits = receiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	return srv, hits, port
}

// get is c.Get(url)'s error; a response, if any, is closed.
func get(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if resp != nil {
		resp.Body.Close()
	}
	return err
}

func TestGuardedClientRefusesLoopback(t *testing.T) {
	t.Parallel()
	srv, hits, port := noContentReceiver(t)
	localhost := "http://localhost:" + port

	for _, target := range []string{srv.URL, localhost} {
		err := get(netguard.NewClient(false, 5*time.Second), target)
		require.Error(t, err, target)
		require.ErrorIs(t, err, netguard.ErrForbiddenAddress, target)
		var addrErr *netguard.AddressError
		require.True(t, errors.As(err, &addrErr))
		require.Equal(t, "loopback", addrErr.Reason)

		err = get(netguard.NewMediaClient(false, 5*time.Second), target)
		require.ErrorIs(t, err, netguard.ErrForbiddenAddress, target)
	}
	require.Zero(t, hits.Load(), "the receiver must not be reached")

	resp, err := netguard.NewClient(true, 5*time.Second).Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.EqualValues(t, 1, hits.Load())
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	target, targetHits := receiver(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "moved here") })
	srv, _ := receiver(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusFound)
	})

	resp, err := netguard.NewClient(true, 5*time.Second).Post(srv.URL, "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	require.Zero(t, targetHits.Load())

	// Media clients follow redirects.
	resp, err = netguard.NewMediaClient(true, 5*time.Second).Get(srv.URL)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "moved here", string(body))
}

func TestMediaClientRefusesRedirectsOffHTTP(t *testing.T) {
	t.Parallel()
	srv, hits := receiver(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/loop" {
			http.Redirect(w, r, "/loop", http.StatusFound)
			return
		}
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	err := get(netguard.NewMediaClient(true, 5*time.Second), srv.URL)
	var redirect *netguard.RedirectError
	require.True(t, errors.As(err, &redirect), "%v", err)
	require.Equal(t, "file", redirect.Scheme)
	require.Equal(t, srv.Listener.Addr().String(), redirect.From)
	require.ErrorIs(t, err, netguard.ErrForbiddenAddress, "a refusal, even with private networks allowed")
	require.Equal(t, redirect.Error(), netguard.Refusal(err))

	hits.Store(0)
	err = get(netguard.NewMediaClient(true, 5*time.Second), srv.URL+"/loop")
	require.ErrorContains(t, err, "stopped after 10 redirects")
	require.NotErrorIs(t, err, netguard.ErrForbiddenAddress)
	require.EqualValues(t, 10, hits.Load(), "as net/http's default policy")
}

func TestClientIgnoresProxyFromEnvironment(t *testing.T) {
	// t.Setenv forbids t.Parallel.
	proxy, proxyHits := receiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	srv, hits := receiver(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")

	resp, err := netguard.NewClient(true, 5*time.Second).Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.EqualValues(t, 1, hits.Load())
	require.Zero(t, proxyHits.Load())
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		url       string
		forbidden bool
	}{
		{"https://93.184.215.14/hook", false},
		{"https://[2606:4700::1111]:8443/hook", false},
		{"http://127.0.0.1:8080/hook", true},
		{"http://localhost/hook", true},
		{"http://[::1]/hook", true},
		{"http://[::ffff:127.0.0.1]/hook", true},
		{"http://10.0.0.5/hook", true},
		{"http://169.254.169.254/latest/meta-data", true},
		{"http://[fe80::1%25eth0]/hook", true},
		{"http://100.64.1.1/hook", true},
		{"http://0.0.0.0:9000/", true},
	} {
		err := netguard.CheckURL(ctx, tc.url, false)
		if tc.forbidden {
			require.ErrorIs(t, err, netguard.ErrForbiddenAddress, tc.url)
			require.NoError(t, netguard.CheckURL(ctx, tc.url, true), "allowPrivate admits %s", tc.url)
		} else {
			require.NoError(t, err, tc.url)
		}
	}
	for _, bad := range []string{"", "ftp://example.com/x", "/relative", "http://"} {
		err := netguard.CheckURL(ctx, bad, true)
		require.Error(t, err, bad)
		require.NotErrorIs(t, err, netguard.ErrForbiddenAddress, bad)
	}
	err := netguard.CheckURL(ctx, "https://does-not-exist.invalid/hook", false)
	require.Error(t, err)
	require.NotErrorIs(t, err, netguard.ErrForbiddenAddress, "a name that does not resolve is not a forbidden address")
}

func TestCheckURLPorts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, allowed := range []string{
		"http://93.184.215.14/", "https://93.184.215.14/",
		"http://93.184.215.14:80/", "https://93.184.215.14:443/",
		"http://93.184.215.14:8080/", "https://93.184.215.14:8443/",
		"http://93.184.215.14:0080/", // 80, as the dialer reads it
	} {
		require.NoError(t, netguard.CheckURL(ctx, allowed, false), allowed)
	}
	for _, refused := range []string{
		"http://93.184.215.14:22/", "https://93.184.215.14:6379/",
		"http://93.184.215.14:0/", "http://93.184.215.14:65535/",
		"http://93.184.215.14:99999/", "https://[2606:4700::1111]:8000/",
		"http://does-not-exist.invalid:5432/", // refused before the lookup fails
	} {
		err := netguard.CheckURL(ctx, refused, false)
		require.ErrorIs(t, err, netguard.ErrForbiddenAddress, refused)
		require.ErrorContains(t, err, "is not allowed; client URLs may use ports 80, 443, 8080 and 8443 only", refused)
		require.NoError(t, netguard.CheckURL(ctx, refused, true), "allowPrivate allows every port: %s", refused)
	}
	// An internal address is named as such, whatever its port.
	require.ErrorContains(t, netguard.CheckURL(ctx, "http://127.0.0.1:22/", false), "loopback")
}

// TestNumericHosts covers hosts that are IPv4 addresses in another form
// than a.b.c.d. Go reads them as names (netip and net.ParseIP refuse them);
// the C library's resolver (inet_aton) and the WHATWG URL standard read
// them as addresses, all of these as 127.0.0.1. CheckURL refuses them at
// creation whatever they mean; at connect time the receiver is not reached
// either way: Go's resolver does not find the name, and a C resolver's
// 127.0.0.1 is refused by the dial hook.
func TestNumericHosts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, hits, port := noContentReceiver(t)

	for _, host := range []string{"2130706433", "0x7f000001", "0x7f.0.0.1", "0x7F.1", "0177.0.0.1", "0177.1", "127.1", "127.0.1", "127.0.0.1.", "017700000001"} {
		_, err := netip.ParseAddr(host)
		require.Error(t, err, "Go does not read %s as an address", host)

		err = netguard.CheckURL(ctx, "http://"+host+"/hook", false)
		require.ErrorIs(t, err, netguard.ErrForbiddenAddress, host)
		require.ErrorContains(t, err, "is not a dotted-decimal IPv4 address", host)
		require.NoError(t, netguard.CheckURL(ctx, "http://"+host+"/hook", true), host)

		err = get(netguard.NewClient(false, 5*time.Second), "http://"+net.JoinHostPort(host, port)+"/")
		var dnsErr *net.DNSError
		var addrErr *netguard.AddressError
		switch {
		case errors.As(err, &dnsErr):
			require.True(t, dnsErr.IsNotFound, "%s: %v", host, err)
		case errors.As(err, &addrErr):
			require.Equal(t, "loopback", addrErr.Reason, host)
		default:
			t.Fatalf("%s: want a lookup failure or a loopback refusal, got %v", host, err)
		}
	}
	require.Zero(t, hits.Load(), "the receiver must not be reached")

	// Names that merely contain digits are names.
	for _, name := range []string{"1.2.3.4.example", "0x7f.example", "v127.test", "0xg"} {
		require.NotErrorIs(t, netguard.CheckURL(ctx, "http://"+name+"/", false), netguard.ErrForbiddenAddress, name)
	}
}

func TestIPv4MappedAndFullWidthHosts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, hits, port := noContentReceiver(t)

	// Full-width digits: the HTTP transport maps the name to ASCII (IDNA)
	// and so connects to 127.0.0.1.
	fullWidth := "１２７.０.０.１"
	resp, err := netguard.NewClient(true, 5*time.Second).Get("http://" + net.JoinHostPort(fullWidth, port) + "/")
	require.NoError(t, err, "without the guard, Go connects to 127.0.0.1")
	resp.Body.Close()
	require.EqualValues(t, 1, hits.Load())

	for _, host := range []string{"[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::ffff:7f00:0001]", "[64:ff9b::7f00:1]", fullWidth} {
		var addrErr *netguard.AddressError
		err := netguard.CheckURL(ctx, "http://"+host+"/hook", false)
		require.True(t, errors.As(err, &addrErr), "%s: refused at creation: %v", host, err)
		require.Equal(t, "loopback", addrErr.Reason, host)

		hostPort := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		err = get(netguard.NewClient(false, 5*time.Second), "http://"+net.JoinHostPort(hostPort, port)+"/")
		require.True(t, errors.As(err, &addrErr), "%s: refused at connect time: %v", host, err)
		require.Equal(t, "loopback", addrErr.Reason, host)
	}
	require.EqualValues(t, 1, hits.Load(), "the guarded client never reaches the receiver")
}
