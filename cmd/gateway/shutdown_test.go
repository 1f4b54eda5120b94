package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
			g := newGateway(t, "", "--providers", writeCatalog(t, slowCatalog), "--worker-stop-timeout", tc.stopTimeout)
			id := g.create("llm-tasks", llmTaskBody).Data.ID
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
			g.waitEnded("llm-tasks", id, 90*time.Second, "completed")

			var attempts []int32
			for _, event := range historyOf(context.Background(), t, temporalClient(t, g.temporal), id) {
				if started := event.GetActivityTaskStartedEventAttributes(); started != nil {
					attempts = append(attempts, started.GetAttempt())
				}
			}
			require.Equal(t, []int32{tc.attempt}, attempts, "the provider call's attempts")
		})
	}
}

// SIGTERM to the API finishes the requests in flight and takes no new
// ones: a create whose body is still arriving when the signal comes is
// answered 202, and the job runs after a restart.
func TestSIGTERMFinishesRequestsInFlight(t *testing.T) {
	t.Parallel()
	g := newGateway(t, "")
	body := llmTaskBody
	conn, err := net.Dial("tcp", g.listen)
	require.NoError(t, err)
	defer conn.Close()
	half := len(body) / 2
	_, err = fmt.Fprintf(conn, "POST /v1/llm-tasks HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		g.listen, g.token, len(body), body[:half])
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // the request is in the server's hands

	require.NoError(t, g.cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", g.listen, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	}, 10*time.Second, 50*time.Millisecond, "new connections are refused once SIGTERM arrived")

	_, err = io.WriteString(conn, body[half:])
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	answer, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", answer)
	var doc jobDoc
	require.NoError(t, json.Unmarshal(answer, &doc))
	select {
	case <-g.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("gateway dev did not exit after SIGTERM")
	}

	g.start()
	done := g.waitFor("llm-tasks", doc.Data.ID, 60*time.Second, terminal)
	require.Equal(t, "completed", done.Data.Attributes.Status, "the job accepted while stopping runs")
}
