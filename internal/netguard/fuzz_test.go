package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestControlChecksAddressThenPort(t *testing.T) {
	t.Parallel()
	for address, want := range map[string]string{
		"93.184.215.14:80":       "",
		"93.184.215.14:443":      "",
		"93.184.215.14:8080":     "",
		"[2606:4700::1111]:8443": "",
		"93.184.215.14:22":       "port 22 is not allowed",
		"[2606:4700::1111]:0":    "port 0 is not allowed",
		"127.0.0.1:22":           "127.0.0.1 is a loopback address",
		"[fe80::1%eth0]:443":     "fe80::1 is a link-local address",
		"not-an-address:80":      "cannot parse",
	} {
		err := control(context.Background(), "tcp", address, nil)
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", address, err)
			}
			continue
		}
		if !errors.Is(err, ErrForbiddenAddress) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want a refusal containing %q", address, err, want)
		}
	}
}

// fakeResolver stands for DNS in the fuzz test: names ending in a number
// resolve as a C resolver would read the worst of them (127.0.0.1), names
// under localhost or internal to internal addresses, .invalid names to
// nothing, any other name to a public address.
type fakeResolver struct{}

func (fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	switch {
	case host == "" || strings.HasSuffix(host, ".invalid"):
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	case endsInNumber(host):
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		return []netip.Addr{netip.MustParseAddr("::1"), netip.MustParseAddr("127.0.0.1")}, nil
	case strings.Contains(host, "internal"):
		return []netip.Addr{netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.0.0.1")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("2606:4700::1111")}, nil
}

var errNoDial = errors.New("fuzz: no dialing")

// dialAddress is the address net/http's transport would dial for rawURL,
// or "" when it would not dial at all.
func dialAddress(rawURL string) string {
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		return ""
	}
	var dialed string
	tr := &http.Transport{DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
		dialed = addr
		return nil, errNoDial
	}}
	if resp, err := tr.RoundTrip(req); err == nil {
		resp.Body.Close()
	}
	return dialed
}

// FuzzCheckURL checks CheckURL against what the HTTP client then does:
// whatever CheckURL accepts, every connection the client opens for it
// passes the dial hook (resolving names with fakeResolver); and
// allowPrivate accepts exactly the absolute http and https URLs.
func FuzzCheckURL(f *testing.F) {
	for _, seed := range []string{
		"https://93.184.215.14/hook", "http://example.com:8080/x?y=1#z", "https://[2606:4700::1111]:8443/",
		"http://127.0.0.1/", "http://localhost:9000/", "http://api.internal/", "http://[::ffff:7f00:1]/",
		"http://2130706433/", "http://0x7f.0.0.1/", "http://0177.0.0.1/", "http://127.1/", "http://127.0.0.1./",
		"http://１２７.０.０.１/", "http://ｌｏｃａｌｈｏｓｔ/", "http://bücher.example/", "http://[fe80::1%25eth0]/",
		"http://[64:ff9b::a00:1]/", "http://[2002:7f00:1::]/", "http://example.com:22/", "http://example.com:0080/",
		"http://user:pass@example.com/", "http://example.com:/", "http://:80/", "ftp://example.com/", "//example.com/",
		"http://does-not-exist.invalid:6379/", "HTTP://EXAMPLE.COM/", "http://example.com\\@127.0.0.1/",
	} {
		f.Add(seed)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, rawURL string) {
		u, parseErr := url.Parse(rawURL)
		absolute := parseErr == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != ""
		if err := checkURL(ctx, fakeResolver{}, rawURL, true); (err == nil) != absolute {
			t.Fatalf("allowPrivate: %q gives %v; absolute http(s) URL: %v", rawURL, err, absolute)
		}
		err := checkURL(ctx, fakeResolver{}, rawURL, false)
		if !absolute {
			if err == nil || errors.Is(err, ErrForbiddenAddress) {
				t.Fatalf("%q is not an absolute http(s) URL, yet CheckURL gives %v", rawURL, err)
			}
			return
		}
		if errors.Is(err, ErrForbiddenAddress) {
			return
		}
		dialed := dialAddress(rawURL)
		if dialed == "" {
			return
		}
		host, port, splitErr := net.SplitHostPort(dialed)
		if splitErr != nil {
			return // the dialer fails on it too
		}
		var addrs []netip.Addr
		if addr, perr := netip.ParseAddr(host); perr == nil {
			addrs = []netip.Addr{addr}
		} else {
			addrs, _ = fakeResolver{}.LookupNetIP(ctx, "ip", host)
		}
		for _, addr := range addrs {
			if derr := control(ctx, "tcp", net.JoinHostPort(addr.String(), port), nil); derr != nil {
				t.Fatalf("CheckURL(%q) gives %v, but the client dials %s (%s), which the dial hook refuses: %v", rawURL, err, dialed, addr, derr)
			}
		}
	})
}
