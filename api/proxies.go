package api

import (
	"net"
	"net/netip"
	"strings"

	"github.com/gin-gonic/gin"
)

// forwardingHeaders are the headers a reverse proxy sets about the
// client: only a trusted proxy may set them (docs/operations.md, Behind a
// proxy).
var forwardingHeaders = []string{"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Real-Ip", "Forwarded"}

// dropUntrustedForwarding removes the forwarding headers of a request
// whose peer is not one of the trusted proxies, so a client cannot change
// what the gateway believes of it (its address, the scheme of the links it
// is given).
func dropUntrustedForwarding(trusted []netip.Prefix) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !fromTrusted(c.Request.RemoteAddr, trusted) {
			for _, h := range forwardingHeaders {
				c.Request.Header.Del(h)
			}
		}
		c.Next()
	}
}

func fromTrusted(remoteAddr string, trusted []netip.Prefix) bool {
	if len(trusted) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	for _, p := range trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// ParseTrustedProxies reads a comma-separated list of addresses and CIDR
// prefixes ("10.0.0.0/8, 192.168.1.7").
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			out = append(out, p.Masked())
			continue
		}
		addr, err := netip.ParseAddr(part)
		if err != nil {
			return nil, err
		}
		out = append(out, netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen()))
	}
	return out, nil
}
