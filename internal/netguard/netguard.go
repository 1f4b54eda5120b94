// Package netguard keeps the gateway's outbound requests to client-supplied
// URLs (webhooks, media) off loopback, private, link-local and other
// internal addresses, so a job cannot make a worker reach the gateway's own
// network (SSRF).
//
// The check runs on the resolved IP at connect time (net.Dialer's control
// hook), after DNS and for every connection, redirects included, so a name
// that resolves to a public address when a job is created and to an
// internal one when it is delivered (DNS rebinding) is still refused.
// CheckURL repeats the check at job creation, to refuse such URLs early.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrForbiddenAddress marks a request refused because its host is, or
// resolves to, an address outside the public internet.
var ErrForbiddenAddress = errors.New("forbidden address")

// AddressError is the refusal of one address.
type AddressError struct {
	// Host is the name that resolved to Addr; "" when Addr was given.
	Host   string
	Addr   netip.Addr
	Reason string // e.g. "loopback", "private"
}

func (e *AddressError) Error() string {
	if e.Host != "" {
		return fmt.Sprintf("%s resolves to %s, a %s address", e.Host, e.Addr, e.Reason)
	}
	return fmt.Sprintf("%s is a %s address", e.Addr, e.Reason)
}

// Is makes errors.Is(err, ErrForbiddenAddress) true.
func (e *AddressError) Is(target error) bool { return target == ErrForbiddenAddress }

var (
	sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10") // RFC 6598, carrier-grade NAT
	thisNetwork        = netip.MustParsePrefix("0.0.0.0/8")     // RFC 1122: "this host on this network"
	reservedV4         = netip.MustParsePrefix("240.0.0.0/4")   // RFC 1112, and 255.255.255.255
	siteLocalV6        = netip.MustParsePrefix("fec0::/10")     // RFC 3879, deprecated private
	ipv4CompatibleV6   = netip.MustParsePrefix("::/96")         // RFC 4291, deprecated
	nat64              = netip.MustParsePrefix("64:ff9b::/96")  // RFC 6052, embeds an IPv4 address
)

// Classify says why addr may not be reached ("loopback", "private",
// "link-local", "unspecified", "multicast", "shared (CGNAT)", "reserved"),
// or "" when it is a public address. IPv4-mapped (::ffff:a.b.c.d) and NAT64
// (64:ff9b::a.b.c.d) forms are judged by the IPv4 address they carry.
func Classify(addr netip.Addr) string {
	addr = addr.WithZone("").Unmap()
	if nat64.Contains(addr) {
		b := addr.As16()
		addr = netip.AddrFrom4([4]byte(b[12:]))
	}
	switch {
	case !addr.IsValid():
		return "invalid"
	case addr.IsUnspecified(), thisNetwork.Contains(addr):
		return "unspecified"
	case addr.IsLoopback():
		return "loopback"
	case addr.IsPrivate(), siteLocalV6.Contains(addr):
		return "private"
	case addr.IsLinkLocalUnicast():
		return "link-local"
	case addr.IsMulticast():
		return "multicast"
	case sharedAddressSpace.Contains(addr):
		return "shared (CGNAT)"
	case reservedV4.Contains(addr), ipv4CompatibleV6.Contains(addr):
		return "reserved"
	}
	return ""
}

// refusal is the refusal of addr, or nil when addr is public.
func refusal(addr netip.Addr) *AddressError {
	if reason := Classify(addr); reason != "" {
		return &AddressError{Addr: addr.WithZone("").Unmap(), Reason: reason}
	}
	return nil
}

// control is the dialer hook: it sees the address about to be connected
// to, after name resolution.
func control(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse %q", ErrForbiddenAddress, address)
	}
	if e := refusal(ap.Addr()); e != nil {
		return e
	}
	return nil
}

// NewClient returns the client for webhook deliveries. Unless allowPrivate,
// it refuses to connect to anything but public addresses (the error wraps
// ErrForbiddenAddress). It never uses a proxy from the environment and
// never follows redirects: a 3xx is returned like any other answer.
// timeout bounds each whole exchange (0: none).
func NewClient(allowPrivate bool, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: newTransport(allowPrivate),
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// NewMediaClient is NewClient for fetching media: it follows up to 10
// redirects, each new connection checked like the first.
func NewMediaClient(allowPrivate bool, timeout time.Duration) *http.Client {
	return &http.Client{Transport: newTransport(allowPrivate), Timeout: timeout}
}

func newTransport(allowPrivate bool) *http.Transport {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.ControlContext = control
	}
	return &http.Transport{
		Proxy:                 nil, // a proxy would hide the real destination from the check
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// resolver looks up host names; tests replace it.
var resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
} = net.DefaultResolver

// CheckURL checks a client-supplied URL before it is accepted: an absolute
// http or https URL whose host, unless allowPrivate, is or resolves only to
// public addresses. A refused address gives an error wrapping
// ErrForbiddenAddress; a host that does not resolve gives another error
// (the caller may accept such URLs: the connect-time check still applies).
func CheckURL(ctx context.Context, rawURL string, allowPrivate bool) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("not an absolute http or https URL")
	}
	if allowPrivate {
		return nil
	}
	host := u.Hostname()
	if addr, err := netip.ParseAddr(host); err == nil {
		if e := refusal(addr); e != nil {
			return e
		}
		return nil
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", host, err)
	}
	for _, addr := range addrs {
		if e := refusal(addr); e != nil {
			e.Host = host
			return e
		}
	}
	return nil
}
