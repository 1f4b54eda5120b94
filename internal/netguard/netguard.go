// Package netguard keeps the gateway's outbound requests to client-supplied
// URLs (webhooks, media) off loopback, private, link-local and other
// internal addresses, and on the ports of web servers (80, 443, 8080,
// 8443), so a job cannot make a worker reach the gateway's own network
// (SSRF) or services other than web servers. The rules are in
// docs/webhooks.md, Address rules.
//
// The check runs on the resolved IP and port at connect time (net.Dialer's control
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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// ErrForbiddenAddress marks a request refused by the guard: its host is,
// or resolves to, an address outside the public internet, its port is not
// one client URLs may use, or its host is a number that is not a
// dotted-decimal IPv4 address.
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

// ruleError is a refusal that is not about an address: a port, or the
// form of a host.
type ruleError string

func (e ruleError) Error() string { return string(e) }

// Is makes errors.Is(err, ErrForbiddenAddress) true.
func (ruleError) Is(target error) bool { return target == ErrForbiddenAddress }

var (
	nat64         = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052, embeds an IPv4 address
	globalUnicast = netip.MustParsePrefix("2000::/3")     // RFC 4291: every public IPv6 address
)

// special are the special-purpose ranges (IANA's IPv4 and IPv6
// special-purpose address registries) that netip's predicates miss, checked
// in order.
var special = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},        // RFC 1122: "this host on this network"
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"}, // RFC 6598, carrier-grade NAT
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},        // RFC 6890: IETF protocol assignments
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},   // RFC 5737: TEST-NET-1
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},   // RFC 2544
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},        // RFC 1112, and 255.255.255.255
	{netip.MustParsePrefix("fec0::/10"), "private"},           // RFC 3879, deprecated site-local
	{netip.MustParsePrefix("2001::/32"), "tunnel (Teredo)"},   // RFC 4380
	{netip.MustParsePrefix("2001:2::/48"), "benchmarking"},    // RFC 5180
	{netip.MustParsePrefix("2001::/23"), "reserved"},          // RFC 2928: IETF protocol assignments
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"}, // RFC 3849
	{netip.MustParsePrefix("2002::/16"), "tunnel (6to4)"},     // RFC 3056
	{netip.MustParsePrefix("3fff::/20"), "documentation"},     // RFC 9637
}

// Classify says why addr may not be reached ("loopback", "private",
// "link-local", "unspecified", "multicast", "shared (CGNAT)",
// "documentation", "benchmarking", "tunnel (Teredo)", "tunnel (6to4)",
// "reserved"), or "" when it is a public address. IPv4-mapped
// (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) forms are judged by the
// IPv4 address they carry. 6to4 and Teredo addresses are refused outright:
// both tunnels are obsolete, and their embedded IPv4 address says little
// about where the packets end up. IPv6 outside 2000::/3 is reserved.
func Classify(addr netip.Addr) string {
	addr = addr.WithZone("").Unmap()
	if nat64.Contains(addr) {
		b := addr.As16()
		addr = netip.AddrFrom4([4]byte(b[12:]))
	}
	switch {
	case !addr.IsValid():
		return "invalid"
	case addr.IsUnspecified():
		return "unspecified"
	case addr.IsLoopback():
		return "loopback"
	case addr.IsPrivate():
		return "private"
	case addr.IsLinkLocalUnicast():
		return "link-local"
	case addr.IsMulticast():
		return "multicast"
	}
	for _, s := range special {
		if s.prefix.Contains(addr) {
			return s.reason
		}
	}
	if addr.Is6() && !globalUnicast.Contains(addr) {
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

// allowedPorts are the ports client-supplied URLs may use: the default
// HTTP and HTTPS ports and their common alternatives. Other ports reach
// services (databases, caches, admin consoles) more often than webhook
// receivers or media servers.
var allowedPorts = []uint16{80, 443, 8080, 8443}

// checkPort refuses a port (decimal digits) outside allowedPorts.
func checkPort(port string) error {
	if n, err := strconv.ParseUint(port, 10, 16); err == nil && slices.Contains(allowedPorts, uint16(n)) {
		return nil
	}
	return ruleError(fmt.Sprintf("port %s is not allowed; client URLs may use ports 80, 443, 8080 and 8443 only", port))
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
	return checkPort(strconv.Itoa(int(ap.Port())))
}

// NewClient returns the client for webhook deliveries. Unless allowPrivate,
// it refuses to connect to anything but public addresses on an allowed
// port (the error wraps ErrForbiddenAddress). It never uses a proxy from
// the environment and never follows redirects: a 3xx is returned like any
// other answer.
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
// redirects, each new connection checked like the first, and refuses one
// to a URL that is not http or https (a *RedirectError), even with
// allowPrivate.
func NewMediaClient(allowPrivate bool, timeout time.Duration) *http.Client {
	return &http.Client{Transport: newTransport(allowPrivate), Timeout: timeout, CheckRedirect: checkRedirect}
}

// RedirectError is a redirect to a URL that is not http or https (file:,
// ftp:, gopher:...), which media clients refuse to follow. It is a
// refusal: errors.Is(err, ErrForbiddenAddress) is true.
type RedirectError struct {
	From   string // the host that answered the redirect
	Scheme string // the scheme it redirected to
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("%s redirected to a %s: URL; only http and https URLs are followed", e.From, e.Scheme)
}

// Is makes errors.Is(err, ErrForbiddenAddress) true.
func (e *RedirectError) Is(target error) bool { return target == ErrForbiddenAddress }

// checkRedirect is net/http's default (at most 10 redirects) plus the
// scheme rule.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return &RedirectError{From: via[len(via)-1].URL.Host, Scheme: req.URL.Scheme}
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// Refusal says why the guard refused the request err is about (as
// AddressError, a port or host rule, or RedirectError word it), or ""
// when it did not.
func Refusal(err error) string {
	var addr *AddressError
	var rule ruleError
	var redirect *RedirectError
	switch {
	case errors.As(err, &addr):
		return addr.Error()
	case errors.As(err, &rule):
		return rule.Error()
	case errors.As(err, &redirect):
		return redirect.Error()
	case errors.Is(err, ErrForbiddenAddress):
		return ErrForbiddenAddress.Error()
	}
	return ""
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

// resolver looks up host names.
type resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// CheckURL checks a client-supplied URL before it is accepted: an absolute
// http or https URL whose host, unless allowPrivate, is or resolves only to
// public addresses, and whose port is an allowed one. A refused URL gives
// an error wrapping ErrForbiddenAddress; a host that does not resolve gives
// another error (the caller may accept such URLs: the connect-time check
// still applies).
func CheckURL(ctx context.Context, rawURL string, allowPrivate bool) error {
	return checkURL(ctx, net.DefaultResolver, rawURL, allowPrivate)
}

func checkURL(ctx context.Context, r resolver, rawURL string, allowPrivate bool) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return errors.New("not an absolute http or https URL")
	}
	if allowPrivate {
		return nil
	}
	hostErr := checkHost(ctx, r, u.Hostname())
	if errors.Is(hostErr, ErrForbiddenAddress) {
		return hostErr
	}
	if port := u.Port(); port != "" { // else the scheme's default, 80 or 443
		if err := checkPort(port); err != nil {
			return err
		}
	}
	return hostErr
}

// checkHost checks the host of a URL as net/http would connect to it: a
// non-ASCII name is converted to its IDNA ASCII form first, as the
// transport does, so a name written with full-width digits is judged as
// the IP address it becomes.
func checkHost(ctx context.Context, r resolver, host string) error {
	if !isASCII(host) {
		if ascii, err := idna.Lookup.ToASCII(host); err == nil {
			host = ascii
		}
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if e := refusal(addr); e != nil {
			return e
		}
		return nil
	}
	if endsInNumber(host) {
		return ruleError(fmt.Sprintf("host %q ends in a number but is not a dotted-decimal IPv4 address; browsers and C resolvers would read it as an IPv4 address", host))
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
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

// endsInNumber reports a host whose last label (a trailing dot aside) is a
// decimal number or 0x-prefixed hex: the WHATWG URL standard parses such a
// host as an IPv4 address in any of its historical forms (decimal, octal,
// hex, fewer than four parts), and so does inet_aton, behind the C
// library's getaddrinfo. Go reads them as names.
func endsInNumber(host string) bool {
	labels := strings.Split(host, ".")
	if len(labels) > 1 && labels[len(labels)-1] == "" {
		labels = labels[:len(labels)-1]
	}
	last := labels[len(labels)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	if len(last) >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X') {
		return strings.Trim(last[2:], "0123456789abcdefABCDEF") == ""
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
