package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

func TestJobStartNotificationsReachListenersOfOtherProcesses(t *testing.T) {
	t.Parallel()
	dsn := storetest.FreshPostgresURL(t)
	api, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = api.Close() })
	worker, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = worker.Close() })

	ctx, cancel := context.WithCancel(context.Background())
	woken := make(chan struct{}, 16)
	listening := make(chan error, 1)
	go func() {
		listening <- worker.Jobs.ListenJobStarts(ctx, func() {
			select {
			case woken <- struct{}{}:
			default:
			}
		})
	}()
	// LISTEN takes effect a moment after the goroutine starts: notify
	// until a wake arrives.
	require.Eventually(t, func() bool {
		require.NoError(t, api.Jobs.NotifyJobStarts(context.Background()))
		select {
		case <-woken:
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}, 10*time.Second, time.Millisecond)

	cancel()
	select {
	case err := <-listening:
		require.NoError(t, err, "ends with its context")
	case <-time.After(10 * time.Second):
		t.Fatal("ListenJobStarts did not return when its context ended")
	}
}

func TestJobStartNotificationsNeedPostgres(t *testing.T) {
	t.Parallel()
	s := storetest.SQLite(t)
	require.ErrorIs(t, s.Jobs.NotifyJobStarts(context.Background()), store.ErrNoNotifications)
	require.ErrorIs(t, s.Jobs.ListenJobStarts(context.Background(), func() {}), store.ErrNoNotifications)
}
