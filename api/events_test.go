package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/app/jobwatch"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/store"
)

// setupStreaming is setup with a job watcher and the store's events, so
// that job event streams are served, and the configuration adjusted by
// each of configure.
func setupStreaming(t testing.TB, configure ...func(*api.Config)) *bundle {
	t.Helper()
	return setupWatching(t, func(cfg *api.Config, w *jobwatch.Watcher, st *store.Store) {
		cfg.Watcher, cfg.Events = w, st.Jobs
	}, configure...)
}

// sseEvent is one server-sent event.
type sseEvent struct {
	ID, Event, Data string
}

// sseStream reads a response's server-sent events.
type sseStream struct {
	resp       *http.Response
	lines      *bufio.Scanner
	keepAlives int
}

// openEvents opens the event stream at path with headers (name, value
// pairs); it is closed when the test ends.
func openEvents(t *testing.T, baseURL, path, token string, headers ...string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return &sseStream{resp: resp, lines: bufio.NewScanner(resp.Body)}
}

// next reads the next event; false when the stream ended.
func (s *sseStream) next(t *testing.T) (sseEvent, bool) {
	t.Helper()
	var e sseEvent
	for s.lines.Scan() {
		line := s.lines.Text()
		switch {
		case line == "" && e != (sseEvent{}):
			return e, true
		case line == ": keep-alive":
			s.keepAlives++
		case strings.HasPrefix(line, "id: "):
			e.ID = line[len("id: "):]
		case strings.HasPrefix(line, "event: "):
			e.Event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			require.Empty(t, e.Data, "one data line per event")
			e.Data = line[len("data: "):]
		case line != "":
			t.Fatalf("unexpected line %q", line)
		}
	}
	require.NoError(t, s.lines.Err())
	require.Equal(t, sseEvent{}, e, "the stream ended inside an event")
	return e, false
}

// rest reads the stream to its end.
func (s *sseStream) rest(t *testing.T) []sseEvent {
	t.Helper()
	var out []sseEvent
	for {
		e, ok := s.next(t)
		if !ok {
			return out
		}
		out = append(out, e)
	}
}

// payload decodes an event's data: {"event", "data"}.
func (e sseEvent) payload(t *testing.T) (string, map[string]any) {
	t.Helper()
	var p struct {
		Event string         `json:"event"`
		Data  map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(e.Data), &p))
	require.Equal(t, e.Event, p.Event)
	return p.Event, p.Data
}

// projector writes a job's projection as its workflow does.
type projector struct {
	t   *testing.T
	b   *bundle
	job jobs.Record
}

func (p *projector) save(status jobs.Status, progress int) {
	p.t.Helper()
	p.job.Status, p.job.Progress, p.job.Revision = status, progress, p.job.Revision+1
	now := time.Now().UTC()
	switch status {
	case jobs.StatusProcessing:
		p.job.ProcessedAt, p.job.Provider = &now, "alpha"
		p.job.Routing = `{"provider_id":"alpha","reason":"explicit_choice","attempt":1,"decided_at":"2025-03-04T05:06:09Z"}`
		p.job.RoutingHistory = "[" + p.job.Routing + "]"
	case jobs.StatusCompleted:
		p.job.CompletedAt, p.job.Result = &now, sampleResults[string(p.job.Service)]
	case jobs.StatusFailed:
		p.job.CompletedAt, p.job.ErrorCode, p.job.ErrorMessage = &now, jobs.CodeProvidersExhausted, "every eligible provider failed"
	}
	job := p.job
	require.NoError(p.t, p.b.store.Jobs.SaveJob(context.Background(), &job))
}

func (p *projector) progress(n int) {
	p.t.Helper()
	require.NoError(p.t, p.b.store.Jobs.UpdateProgress(context.Background(), p.job.ID, n))
	p.job.Progress = n
}

// pendingJob seeds a pending job of service and returns its projector.
func (b *bundle) pendingJob(t *testing.T, service string) *projector {
	t.Helper()
	job := b.seed(t, jobs.Record{Service: jobs.ServiceID(service), Status: jobs.StatusPending, ClientMeta: `{"ref":"r-1"}`})
	return &projector{t: t, b: b, job: *job}
}

func TestEventStreamReplaysAFinishedJob(t *testing.T) {
	t.Parallel()
	b := setupStreaming(t)
	p := b.pendingJob(t, "transcriptions")
	p.save(jobs.StatusProcessing, 0)
	p.progress(40)
	p.save(jobs.StatusCompleted, 100)

	s := openEvents(t, b.server.URL, jobPath("transcriptions", p.job.ID, "/events"), b.readToken(t))
	require.Equal(t, "text/event-stream", s.resp.Header.Get("Content-Type"))
	require.Equal(t, "no-cache", s.resp.Header.Get("Cache-Control"))
	require.Equal(t, "no", s.resp.Header.Get("X-Accel-Buffering"))
	evs := s.rest(t)
	require.Len(t, evs, 3, "the stream ends after the terminal event")
	want := []struct {
		id, event, status string
		progress          float64
	}{
		{"1", "transcription.progress", "processing", 0},
		{"2", "transcription.progress", "processing", 40},
		{"3", "transcription.completed", "completed", 100},
	}
	for i, w := range want {
		require.Equal(t, w.id, evs[i].ID)
		require.Equal(t, w.event, evs[i].Event)
		_, data := evs[i].payload(t)
		require.Equal(t, p.job.ID, data["id"])
		require.Equal(t, "transcription-job", data["type"])
		attrs := data["attributes"].(map[string]any)
		require.Equal(t, w.status, attrs["status"])
		require.Equal(t, w.progress, attrs["progress"])
		require.NotNil(t, attrs["input"], "the documents are the job's")
		meta := data["meta"].(map[string]any)
		require.NotContains(t, meta, "system", "events carry no meta.system")
		require.Equal(t, map[string]any{"ref": "r-1"}, meta["client"])
		if w.status == "completed" {
			require.NotNil(t, attrs["result"])
		} else {
			require.Nil(t, attrs["result"])
		}
	}

	// The same events as the job's webhooks: WebhookBody of the snapshot.
	rec, err := b.store.Jobs.GetJob(t.Context(), p.job.ID)
	require.NoError(t, err)
	snap, err := rec.Snapshot()
	require.NoError(t, err)
	body, err := jobs.WebhookBody("transcription.completed", snap)
	require.NoError(t, err)
	require.JSONEq(t, string(body), evs[2].Data)

	t.Run("resuming after an event sends only the later ones", func(t *testing.T) {
		evs := openEvents(t, b.server.URL, jobPath("transcriptions", p.job.ID, "/events"), b.readToken(t), "Last-Event-ID", "2").rest(t)
		require.Len(t, evs, 1)
		require.Equal(t, "3", evs[0].ID)
	})
	t.Run("resuming after the terminal event ends at once", func(t *testing.T) {
		require.Empty(t, openEvents(t, b.server.URL, jobPath("transcriptions", p.job.ID, "/events"), b.readToken(t), "Last-Event-ID", "3").rest(t))
	})
}

func TestEventStreamFollowsARunningJob(t *testing.T) {
	t.Parallel()
	b := setupStreaming(t)
	p := b.pendingJob(t, "translations")
	path := jobPath("translations", p.job.ID, "/events")

	s := openEvents(t, b.server.URL, path, b.readToken(t))
	p.save(jobs.StatusProcessing, 0)
	e, ok := s.next(t)
	require.True(t, ok)
	require.Equal(t, sseEvent{ID: "1", Event: "translation.progress", Data: e.Data}, e)
	p.progress(30)
	e, ok = s.next(t)
	require.True(t, ok)
	require.Equal(t, "2", e.ID)
	_, data := e.payload(t)
	require.Equal(t, float64(30), data["attributes"].(map[string]any)["progress"])
	require.NoError(t, s.resp.Body.Close())

	// Reconnecting: the events after the last one received, none twice.
	p.progress(60)
	start := time.Now()
	s = openEvents(t, b.server.URL, path, b.readToken(t), "Last-Event-ID", "2")
	e, ok = s.next(t)
	require.True(t, ok)
	require.Equal(t, "3", e.ID)
	require.Less(t, time.Since(start), 500*time.Millisecond, "the first event comes at once")
	p.save(jobs.StatusFailed, 60)
	evs := s.rest(t)
	require.Len(t, evs, 1)
	require.Equal(t, "4", evs[0].ID)
	require.Equal(t, "translation.failed", evs[0].Event)
	_, data = evs[0].payload(t)
	require.Equal(t, "PROVIDERS_EXHAUSTED", data["attributes"].(map[string]any)["error"].(map[string]any)["code"])
}

func TestEventStreamEndsWhenTheJobIsDeleted(t *testing.T) {
	t.Parallel()
	b := setupStreaming(t)
	p := b.pendingJob(t, "transcriptions")
	p.save(jobs.StatusProcessing, 0)
	s := openEvents(t, b.server.URL, jobPath("transcriptions", p.job.ID, "/events"), b.readToken(t))
	_, ok := s.next(t)
	require.True(t, ok)
	_, _, err := b.store.Jobs.DeleteJob(t.Context(), p.job.ID, userA, time.Now())
	require.NoError(t, err)
	require.Empty(t, s.rest(t))
}

func TestEventStreamHeartbeats(t *testing.T) {
	t.Parallel()
	b := setupStreaming(t, func(cfg *api.Config) { cfg.EventsHeartbeat = 20 * time.Millisecond })
	p := b.pendingJob(t, "transcriptions")
	s := openEvents(t, b.server.URL, jobPath("transcriptions", p.job.ID, "/events"), b.readToken(t))
	time.Sleep(200 * time.Millisecond)
	p.save(jobs.StatusCompleted, 100)
	evs := s.rest(t)
	require.Len(t, evs, 1)
	require.GreaterOrEqual(t, s.keepAlives, 2)
}

// A stream outlives the server's write and read timeouts
// (api.NewHTTPServer).
func TestEventStreamOutlivesTheServerTimeouts(t *testing.T) {
	t.Parallel()
	b := setupStreaming(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := api.NewHTTPServer(b.server.Config.Handler, api.ServerTimeouts{ReadHeader: time.Second, Read: 200 * time.Millisecond, Write: 200 * time.Millisecond, Idle: time.Second})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	p := b.pendingJob(t, "transcriptions")
	s := openEvents(t, "http://"+ln.Addr().String(), jobPath("transcriptions", p.job.ID, "/events"), b.readToken(t))
	p.save(jobs.StatusProcessing, 0)
	_, ok := s.next(t)
	require.True(t, ok)
	time.Sleep(600 * time.Millisecond)
	p.save(jobs.StatusCompleted, 100)
	evs := s.rest(t)
	require.Len(t, evs, 1)
	require.Equal(t, "transcription.completed", evs[0].Event)
}

func TestEventStreamRefusals(t *testing.T) {
	t.Parallel()
	b := setupStreaming(t)
	read := b.readToken(t)
	p := b.pendingJob(t, "transcriptions")
	path := jobPath("transcriptions", p.job.ID, "/events")

	for _, accept := range []string{"", "application/json", "*/*", "text/*"} {
		r := b.do(t, http.MethodGet, path, read, nil, "Accept", accept)
		requireError(t, r, http.StatusNotAcceptable, "NOT_ACCEPTABLE")
	}
	sse := func(path, token string, headers ...string) *response {
		return b.do(t, http.MethodGet, path, token, nil, append([]string{"Accept", "text/event-stream"}, headers...)...)
	}
	requireError(t, sse(path, read, "Last-Event-ID", "abc"), http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	requireError(t, sse(path, b.tokenFor(t, tenantB, userB, "transcriptions:read")), http.StatusNotFound, "NOT_FOUND")
	requireError(t, sse(jobPath("translations", p.job.ID, "/events"), read), http.StatusNotFound, "NOT_FOUND")
	requireError(t, sse(path, b.token(t, "translations:read")), http.StatusForbidden, "INSUFFICIENT_SCOPE")
	_, _, err := b.store.Jobs.DeleteJob(t.Context(), p.job.ID, userA, time.Now())
	require.NoError(t, err)
	requireError(t, sse(path, read), http.StatusGone, "JOB_DELETED")
}

// The request duration metric leaves the stream out (docs/operations.md,
// Metrics).
func TestEventStreamIsNotRequestDuration(t *testing.T) {
	t.Parallel()
	b := setupStreaming(t, func(cfg *api.Config) { cfg.Metrics = metrics.New() })
	p := b.pendingJob(t, "translations")
	s := openEvents(t, b.server.URL, jobPath("translations", p.job.ID, "/events"), b.readToken(t))
	time.Sleep(time.Second)
	p.save(jobs.StatusCompleted, 100)
	require.Len(t, s.rest(t), 1)

	re := regexp.MustCompile(`gateway_http_request_duration_seconds_sum\{method="GET",route="/v1/translations/:id/events"\} (\S+)`)
	var m []string
	require.Eventually(t, func() bool {
		m = re.FindStringSubmatch(string(b.do(t, http.MethodGet, "/metrics", "", nil).Body))
		return m != nil
	}, 5*time.Second, 10*time.Millisecond)
	sum, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	require.Less(t, sum, 0.9, "the second streamed is left out")
}

// Closing the watcher, as a stopping process does, ends the streams.
func TestEventStreamEndsWhenTheWatcherCloses(t *testing.T) {
	t.Parallel()
	var watcher *jobwatch.Watcher
	b := setupWatching(t, func(cfg *api.Config, w *jobwatch.Watcher, st *store.Store) {
		watcher, cfg.Watcher, cfg.Events = w, w, st.Jobs
	})
	p := b.pendingJob(t, "transcriptions")
	p.save(jobs.StatusProcessing, 0)
	s := openEvents(t, b.server.URL, jobPath("transcriptions", p.job.ID, "/events"), b.readToken(t))
	_, ok := s.next(t)
	require.True(t, ok)
	watcher.Close()
	require.Empty(t, s.rest(t))
}
