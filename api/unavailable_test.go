package api_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/faultnet"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// setupThroughLink is a bundle whose store reaches PostgreSQL through a
// link the test cuts or holds.
func setupThroughLink(t *testing.T) (*bundle, *faultnet.Link) {
	t.Helper()
	link, databaseURL := storetest.FreshPostgresURLThroughLink(t)
	b := setupWith(t, func(tb testing.TB) *store.Store {
		st, err := store.Open(t.Context(), databaseURL)
		require.NoError(tb, err)
		tb.Cleanup(func() { _ = st.Close() })
		require.NoError(tb, st.Migrate(t.Context()))
		return st
	})
	return b, link
}

func TestDatabaseOutageAnswers503AndRecovers(t *testing.T) {
	t.Parallel()
	b, link := setupThroughLink(t)
	job := b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusPending})
	get := func() *response {
		return b.do(t, http.MethodGet, jobPath("transcriptions", job.ID, ""), b.readToken(t), nil)
	}
	get().requireStatus(t, http.StatusOK)

	link.SetCut(true)
	r := get()
	r.requireStatus(t, http.StatusServiceUnavailable)
	require.Equal(t, "5", r.Header.Get("Retry-After"))
	require.Equal(t, "SERVICE_UNAVAILABLE", r.object(t)["error"].(map[string]any)["code"])

	link.SetCut(false)
	deadline := time.Now().Add(10 * time.Second)
	for get().Status != http.StatusOK {
		require.True(t, time.Now().Before(deadline), "the API recovers once the database is back")
		time.Sleep(100 * time.Millisecond)
	}
}

// A partition that holds bytes instead of resetting connections: every
// request still gets its 503 within a few seconds (the store's statement
// deadline), none hangs, and the API recovers once the link is back.
func TestDatabasePartitionHoldingBytesAnswers503InSeconds(t *testing.T) {
	t.Parallel()
	b, link := setupThroughLink(t)
	job := b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusPending})
	readToken, writeToken := b.readToken(t), b.writeToken(t)
	get := func() *response {
		return b.do(t, http.MethodGet, jobPath("transcriptions", job.ID, ""), readToken, nil)
	}
	get().requireStatus(t, http.StatusOK)

	link.SetHeld(true)
	began := time.Now()
	var wg sync.WaitGroup
	statuses := make(chan int, 21)
	for range 20 {
		wg.Go(func() {
			statuses <- b.do(t, http.MethodPost, "/v1/transcriptions", writeToken, body(t, "transcriptions")).Status
		})
	}
	wg.Go(func() { statuses <- get().Status })
	wg.Wait()
	close(statuses)
	took := time.Since(began)
	for status := range statuses {
		require.Equal(t, http.StatusServiceUnavailable, status)
	}
	require.Less(t, took, 2*store.InteractiveStatementTimeout+3*time.Second, "every request is answered within its deadline")

	link.SetHeld(false)
	deadline := time.Now().Add(15 * time.Second)
	for get().Status != http.StatusOK {
		require.True(t, time.Now().Before(deadline), "the API recovers once the partition ends")
		time.Sleep(100 * time.Millisecond)
	}
}
