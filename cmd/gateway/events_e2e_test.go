package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// e2eEvent is one server-sent event of a job's stream.
type e2eEvent struct {
	ID     int
	Name   string
	Status string
	At     time.Time
}

// openJobEvents subscribes to a job's event stream; its events come on
// the channel, which closes when the stream ends.
func (g *gateway) openJobEvents(ctx context.Context, path string, lastID int) <-chan e2eEvent {
	g.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.url(path), nil)
	require.NoError(g.t, err)
	req.Header.Set("Authorization", "Bearer "+g.token)
	req.Header.Set("Accept", "text/event-stream")
	if lastID > 0 {
		req.Header.Set("Last-Event-ID", strconv.Itoa(lastID))
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(g.t, err)
	require.Equal(g.t, http.StatusOK, resp.StatusCode)
	out := make(chan e2eEvent, 100)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		lines := bufio.NewScanner(resp.Body)
		var e e2eEvent
		for lines.Scan() {
			line := lines.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				e.ID, _ = strconv.Atoi(line[len("id: "):])
			case strings.HasPrefix(line, "event: "):
				e.Name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				var p struct {
					Data struct {
						Attributes struct {
							Status string `json:"status"`
						} `json:"attributes"`
					} `json:"data"`
				}
				if json.Unmarshal([]byte(line[len("data: "):]), &p) == nil {
					e.Status = p.Data.Attributes.Status
				}
			case line == "" && e.ID > 0:
				e.At = time.Now()
				out <- e
				e = e2eEvent{}
			}
		}
	}()
	return out
}

// TestJobEventStreamEndToEnd: dev's API streams a running job's events,
// the first at once, resumes after Last-Event-ID without repeating one,
// and ends on the terminal event (docs/api.md, Following a job live).
func TestJobEventStreamEndToEnd(t *testing.T) {
	t.Parallel()
	g := newGateway(t, "", "--providers", writeCatalog(t, recordCatalog))
	wav := g.url("/dev/samples/tone.wav")
	id := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"input":{"type":"audio","url":"`+wav+`"}}}}`).Data.ID
	g.waitFor("transcriptions", id, 60*time.Second, func(d jobDoc) bool {
		return d.Data.Attributes.Status == "processing" && d.Data.Attributes.Provider == "sandbox-steady"
	})
	path := "/v1/transcriptions/" + id + "/events"

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first, stop := context.WithCancel(ctx)
	subscribed := time.Now()
	events := g.openJobEvents(first, path, 0)
	var got []e2eEvent
	for e := range events {
		got = append(got, e)
		if len(got) == 3 {
			break
		}
	}
	stop()
	require.Len(t, got, 3)
	require.Less(t, got[0].At.Sub(subscribed), 500*time.Millisecond, "the first event of a running job comes at once")
	require.Equal(t, e2eEvent{ID: 1, Name: "transcription.progress", Status: "processing", At: got[0].At}, got[0],
		"entering processing on sandbox-broken")

	// Reconnecting after the last event received: the rest, none twice.
	last := got[len(got)-1].ID
	for e := range g.openJobEvents(ctx, path, last) {
		got = append(got, e)
	}
	for i, e := range got {
		require.Equal(t, i+1, e.ID, "events are numbered in order, none missed or repeated: %v", got)
	}
	end := got[len(got)-1]
	require.Equal(t, "transcription.completed", end.Name, "the stream ends on the terminal event")
	require.Equal(t, "completed", end.Status)
	require.Greater(t, len(got), 5, "processing twice (failover) and progress: %v", got)
	for _, e := range got[:len(got)-1] {
		require.Equal(t, "transcription.progress", e.Name)
	}
	require.NoError(t, ctx.Err())
}
