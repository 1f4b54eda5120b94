package api_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stalledPost opens a connection to addr and sends a POST to path that
// announces a 100,000-byte body and sends one byte of it; token, when set,
// is its bearer token.
func stalledPost(t *testing.T, addr, path, token string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	head := "POST " + path + " HTTP/1.1\r\nHost: " + addr + "\r\n" +
		"Content-Type: application/json\r\nContent-Length: 100000\r\n"
	if token != "" {
		head += "Authorization: Bearer " + token + "\r\n"
	}
	_, err = io.WriteString(conn, head+"\r\n{")
	require.NoError(t, err)
	return conn
}

// waitClosed reads conn until the server closes it and reports whether it
// did before deadline.
func waitClosed(t *testing.T, conn net.Conn, r io.Reader, deadline time.Time) bool {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(deadline))
	_, err := io.Copy(io.Discard, r)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	return true // EOF (nil from io.Copy) or a reset: closed either way
}

// An unauthenticated request is answered 401 without the server waiting
// for its body, and the connection is closed: the body is not drained.
func TestUnauthenticatedStalledBodyIsRejectedAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t) // its server has no read timeout
	t.Cleanup(func() { b.assertNoStarts(t) })

	for _, token := range []string{"", "not-a-jwt"} {
		conn := stalledPost(t, b.server.Listener.Addr().String(), "/v1/transcriptions", token)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		r := bufio.NewReader(conn)
		resp, err := http.ReadResponse(r, nil)
		require.NoError(t, err, "the 401 must come without the body")
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		assert.True(t, resp.Close, "the 401 must close the connection (Connection: close)")
		assert.True(t, waitClosed(t, conn, r, time.Now().Add(5*time.Second)),
			"the server must close the connection without waiting for the body")
	}
}
