package api_test

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// cuttableLink forwards TCP connections to a server until it is cut: then
// it drops every open connection and refuses new ones, as a network
// partition would, until it is restored.
type cuttableLink struct {
	listener net.Listener
	target   string
	mu       sync.Mutex
	cut      bool
	open     map[net.Conn]bool
}

func newCuttableLink(t *testing.T, target string) *cuttableLink {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	link := &cuttableLink{listener: l, target: target, open: map[net.Conn]bool{}}
	t.Cleanup(func() { _ = l.Close(); link.setCut(true) })
	go link.serve()
	return link
}

func (l *cuttableLink) serve() {
	for {
		client, err := l.listener.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		if l.cut {
			l.mu.Unlock()
			_ = client.Close()
			continue
		}
		server, err := net.Dial("tcp", l.target)
		if err != nil {
			l.mu.Unlock()
			_ = client.Close()
			continue
		}
		l.open[client], l.open[server] = true, true
		l.mu.Unlock()
		go func() { _, _ = io.Copy(server, client); _ = server.Close() }()
		go func() { _, _ = io.Copy(client, server); _ = client.Close() }()
	}
}

// setCut cuts (true) or restores (false) the link.
func (l *cuttableLink) setCut(cut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = cut
	if cut {
		for c := range l.open {
			_ = c.Close()
		}
		clear(l.open)
	}
}

func TestDatabaseOutageAnswers503AndRecovers(t *testing.T) {
	t.Parallel()
	direct, err := url.Parse(storetest.FreshPostgresURL(t))
	require.NoError(t, err)
	link := newCuttableLink(t, direct.Host)
	viaLink := *direct
	viaLink.Host = link.listener.Addr().String()
	q := viaLink.Query()
	q.Set("connect_timeout", "2")
	viaLink.RawQuery = q.Encode()

	b := setupWith(t, func(tb testing.TB) *store.Store {
		st, err := store.Open(t.Context(), viaLink.String())
		require.NoError(tb, err)
		tb.Cleanup(func() { _ = st.Close() })
		require.NoError(tb, st.Migrate(t.Context()))
		return st
	})
	job := b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusPending})
	get := func() *response {
		return b.do(t, http.MethodGet, jobPath("transcriptions", job.ID, ""), b.readToken(t), nil)
	}
	get().requireStatus(t, http.StatusOK)

	link.setCut(true)
	r := get()
	r.requireStatus(t, http.StatusServiceUnavailable)
	require.Equal(t, "5", r.Header.Get("Retry-After"))
	require.Equal(t, "SERVICE_UNAVAILABLE", r.object(t)["error"].(map[string]any)["code"])

	link.setCut(false)
	deadline := time.Now().Add(10 * time.Second)
	for get().Status != http.StatusOK {
		require.True(t, time.Now().Before(deadline), "the API recovers once the database is back")
		time.Sleep(100 * time.Millisecond)
	}
}
