package api

import (
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// maxWaitSeconds is the longest wait Prefer: wait gets (docs/api.md,
// Waiting for a job).
const maxWaitSeconds = 60

// preferredWait is the wait in seconds a request's Prefer header asks for,
// capped at maxWaitSeconds; false when it asks for none, or for one that
// is not a positive whole number, which is ignored (docs/api.md, Waiting
// for a job).
func preferredWait(h http.Header) (int, bool) {
	v, ok := preferences(h)["wait"]
	if !ok || v == "" || strings.Trim(v, "0123456789") != "" {
		return 0, false
	}
	v = strings.TrimLeft(v, "0")
	switch {
	case v == "":
		return 0, false
	case len(v) > 2:
		return maxWaitSeconds, true
	}
	n, _ := strconv.Atoi(v) // one or two digits
	return min(n, maxWaitSeconds), true
}

// preferences are the preferences of a request's Prefer headers (RFC
// 7240): each name, lower-cased, with its value, unquoted ("" without
// one). Only the first of a name counts; parameters after ";" are read
// past, malformed preferences skipped.
func preferences(h http.Header) map[string]string {
	out := map[string]string{}
	for _, line := range h.Values("Prefer") {
		for _, elem := range splitUnquoted(line, ',') {
			first := splitUnquoted(elem, ';')[0]
			name, value, _ := strings.Cut(first, "=")
			name = strings.ToLower(strings.TrimSpace(name))
			if !httpguts.ValidHeaderFieldName(name) {
				continue
			}
			if _, seen := out[name]; seen {
				continue
			}
			if value, ok := word(strings.TrimSpace(value)); ok {
				out[name] = value
			}
		}
	}
	return out
}

// splitUnquoted splits s at each sep outside a quoted string.
func splitUnquoted(s string, sep byte) []string {
	var parts []string
	quoted, escaped, start := false, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// word is the value of a token or quoted string (RFC 7230, section
// 3.2.6; httpguts.ValidHeaderFieldName checks a token); "" for none, false when s is neither.
func word(s string) (string, bool) {
	if !strings.HasPrefix(s, `"`) {
		return s, s == "" || httpguts.ValidHeaderFieldName(s)
	}
	if len(s) < 2 || !strings.HasSuffix(s, `"`) {
		return "", false
	}
	var b strings.Builder
	inner := s[1 : len(s)-1]
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		if c == '\\' && i+1 < len(inner) {
			i++
			c = inner[i]
		} else if c == '"' || c == '\\' {
			return "", false
		}
		b.WriteByte(c)
	}
	return b.String(), true
}
