package main

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// SIGTERM to a worker lets the provider calls it runs finish within
// --worker-stop-timeout: the call completes on its first attempt instead
// of being cancelled and run again after a restart.
func TestSIGTERMLetsRunningCallsFinish(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		stopTimeout string
		attempt     int32
	}{{"30s", 1}, {"0s", 2}} {
		t.Run("stop-timeout-"+tc.stopTimeout, func(t *testing.T) {
			t.Parallel()
			catalog := filepath.Join(t.TempDir(), "providers.yaml")
			require.NoError(t, os.WriteFile(catalog, []byte(slowCatalog), 0o644))
			g := newGateway(t, "", "--providers", catalog, "--worker-stop-timeout", tc.stopTimeout)
			id := g.create("llm-tasks", `{"data":{"type":"llm-task-job","attributes":{"input":{"type":"text","text":"x","prompt":"y"}}}}`).Data.ID
			g.waitFor("llm-tasks", id, 30*time.Second, func(d jobDoc) bool {
				return d.Data.Attributes.Status == "processing" && d.Data.Attributes.Progress != nil && *d.Data.Attributes.Progress > 0
			})

			require.NoError(t, g.cmd.Process.Signal(syscall.SIGTERM))
			select {
			case <-g.exited:
			case <-time.After(60 * time.Second):
				t.Fatal("gateway dev did not stop within 60 s of SIGTERM")
			}
			g.start()
			done := g.waitFor("llm-tasks", id, 90*time.Second, terminal)
			require.Equal(t, "completed", done.Data.Attributes.Status)

			temporal, err := client.Dial(client.Options{HostPort: g.temporal})
			require.NoError(t, err)
			defer temporal.Close()
			iter := temporal.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			var attempts []int32
			for iter.HasNext() {
				event, err := iter.Next()
				require.NoError(t, err)
				if started := event.GetActivityTaskStartedEventAttributes(); started != nil {
					attempts = append(attempts, started.GetAttempt())
				}
			}
			require.Equal(t, []int32{tc.attempt}, attempts, "the provider call's attempts")
		})
	}
}
