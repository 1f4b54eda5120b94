package api_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/store/storetest"
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

// serveWith serves b's API with the gateway's HTTP server and timeouts;
// it returns the server's address.
func serveWith(t *testing.T, b *bundle, timeouts api.ServerTimeouts) string {
	t.Helper()
	srv := api.NewHTTPServer(b.server.Config.Handler, timeouts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// An authenticated request whose body stalls has its connection closed
// once the read timeout has passed.
func TestServerClosesStalledBodyAfterReadTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t.Cleanup(func() { b.assertNoStarts(t) })
	const readTimeout = 300 * time.Millisecond
	addr := serveWith(t, b, api.ServerTimeouts{ReadHeader: readTimeout, Read: readTimeout, Write: time.Minute, Idle: time.Minute})

	began := time.Now()
	conn := stalledPost(t, addr, "/v1/transcriptions", b.writeToken(t))
	require.True(t, waitClosed(t, conn, conn, began.Add(readTimeout+5*time.Second)),
		"the server must close the connection once the read timeout has passed")
	assert.GreaterOrEqual(t, time.Since(began), readTimeout)
}

// A kept-alive connection is closed once it has been idle for the idle
// timeout.
func TestServerClosesIdleConnection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const idleTimeout = 300 * time.Millisecond
	addr := serveWith(t, b, api.ServerTimeouts{ReadHeader: time.Minute, Read: time.Minute, Write: time.Minute, Idle: idleTimeout})

	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	require.NoError(t, err)
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.False(t, resp.Close, "the connection must be kept alive")
	answered := time.Now()
	require.True(t, waitClosed(t, conn, r, answered.Add(idleTimeout+5*time.Second)),
		"the server must close an idle connection once the idle timeout has passed")
	// The server's idle clock starts when it has written the answer, a
	// moment before this client read it: only a close well before the
	// timeout would mean keep-alive was not honoured.
	assert.GreaterOrEqual(t, time.Since(answered), idleTimeout/2)
}

// A body that stalls past the read timeout is the client's problem: 408,
// logged as such, never the 503 of a database outage (which alerts).
func TestStalledBodyIsARequestTimeoutNotAnOutage(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	b := setupConfigured(t, storetest.SQLite, func(cfg *api.Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	t.Cleanup(func() { b.assertNoStarts(t) })
	const readTimeout = 300 * time.Millisecond
	addr := serveWith(t, b, api.ServerTimeouts{ReadHeader: readTimeout, Read: readTimeout, Write: time.Minute, Idle: time.Minute})

	conn := stalledPost(t, addr, "/v1/transcriptions", b.writeToken(t))
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, string(body))
	require.Contains(t, string(body), `"REQUEST_TIMEOUT"`)
	require.Empty(t, resp.Header.Get("Retry-After"))
	require.NotContains(t, logs.String(), "database unavailable")
	require.Contains(t, logs.String(), "request body not received")
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
