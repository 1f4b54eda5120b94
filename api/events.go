package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/app/jobwatch"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// JobEventStore reads jobs' recorded lifecycle events and the pieces of
// their streamed answers (store.JobStore).
type JobEventStore interface {
	JobEvents(ctx context.Context, id string, after, limit int) ([]store.JobEvent, error)
	JobDeltas(ctx context.Context, id string, after, limit int) ([]store.JobDelta, error)
}

// DefaultEventsHeartbeat is how often an idle event stream sends a
// comment (docs/api.md, Following a job live).
const DefaultEventsHeartbeat = 15 * time.Second

// mimeEventStream is the media type of server-sent events.
const mimeEventStream = "text/event-stream"

// eventsBatch bounds the events one read of the store returns.
const eventsBatch = 100

// eventsHandler streams a job's lifecycle events (docs/api.md, Following
// a job live): the recorded ones after Last-Event-ID, then each new one
// as the watcher sees the job change, until the job's terminal event.
type eventsHandler struct {
	jobs      jobReader
	events    JobEventStore
	watcher   *jobwatch.Watcher
	views     jobViews
	heartbeat time.Duration
	logger    *slog.Logger
}

// stream handles GET /v1/{resource}/{id}/events.
func (h eventsHandler) stream(svc jobs.Service) gin.HandlerFunc {
	return handle(func(c *gin.Context) error {
		if negotiate(c.GetHeader("Accept"), []string{mimeEventStream}, "") != mimeEventStream {
			return apierror.New(http.StatusNotAcceptable, apierror.CodeNotAcceptable,
				"this route answers text/event-stream only: send Accept: text/event-stream")
		}
		after, delta, err := lastEventID(c.GetHeader("Last-Event-ID"))
		if err != nil {
			return err
		}
		job, err := visibleJob(c, h.jobs, svc)
		if err != nil {
			return err
		}
		// Subscribed before the first read: no change is missed.
		sub := h.watcher.Subscribe(job.ID)
		defer sub.Close()

		rc := startEventStream(c)
		if err := rc.Flush(); err != nil {
			return nil // the client is gone
		}
		started := time.Now()
		// The request duration metric leaves the stream out (docs/operations.md, Metrics).
		defer func() { c.Set(waitedKey, time.Since(started)) }()
		s := &eventStream{h: h, c: c, rc: rc, job: job, after: after, delta: delta, streams: streamsAnswer(job)}
		if s.streams && delta > 0 {
			// The call of the last piece the client had: a piece of
			// another one restarts the answer.
			if last, err := h.events.JobDeltas(c.Request.Context(), job.ID, delta-1, 1); err == nil && len(last) == 1 {
				s.call = last[0].CallID
			}
		}
		s.run(c.Request.Context(), sub)
		return nil
	})
}

// startEventStream answers 200 with server-sent events' headers, for a
// stream that outlives the server's read and write timeouts; each write
// then sets its own deadline (streamWriteTimeout).
func startEventStream(c *gin.Context) *http.ResponseController {
	rc := http.NewResponseController(c.Writer)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	header := c.Writer.Header()
	header.Set("Content-Type", mimeEventStream)
	header.Set("Cache-Control", "no-cache")
	header.Set("X-Accel-Buffering", "no") // nginx passes each event on at once
	c.Status(http.StatusOK)
	c.Writer.WriteHeaderNow()
	return rc
}

// lastEventID parses a reconnecting client's Last-Event-ID: the seq of
// the last lifecycle event it received and, after a dot on a streamed
// job's events, of the last piece of its answer; 0 when absent.
func lastEventID(v string) (event, delta int, err error) {
	if v == "" {
		return 0, 0, nil
	}
	events, deltas, dotted := strings.Cut(v, ".")
	event, err = strconv.Atoi(events)
	if err == nil && dotted {
		delta, err = strconv.Atoi(deltas)
	}
	if err != nil || event < 0 || delta < 0 {
		return 0, 0, apierror.New(http.StatusUnprocessableEntity, apierror.CodeValidation,
			"header Last-Event-ID: must be the id of an event of this stream, such as 3 or 3.12")
	}
	return event, delta, nil
}

// streamsAnswer reports whether the job's event stream carries its
// answer as it is written: an llm-task that asked for a stream and has
// not ended (docs/api.md, Streamed answers). An ended job's terminal
// event holds the whole answer.
func streamsAnswer(job *jobs.Record) bool {
	if job.Service != jobs.LLMTasks || job.Terminal() || job.Options == "" {
		return false
	}
	var options jobs.LLMTaskOptions
	return json.Unmarshal([]byte(job.Options), &options) == nil && options.Stream
}

// eventStream is one client's stream of one job's events.
type eventStream struct {
	h     eventsHandler
	c     *gin.Context
	rc    *http.ResponseController
	job   *jobs.Record // the documents events are rendered with
	after int          // the seq of the last event sent

	streams bool      // the job's answer is streamed: its deltas are sent
	delta   int       // the seq of the last delta read
	calls   callOrder // the provider calls whose deltas were read
	call    string    // the provider call of the last delta sent
}

// run sends the recorded events, then new ones as the job changes, until
// the job's terminal event was sent, the job is gone, the watcher closed
// or the client left.
func (s *eventStream) run(ctx context.Context, sub *jobwatch.Subscription) {
	heartbeat := s.h.heartbeat
	if heartbeat <= 0 {
		heartbeat = DefaultEventsHeartbeat
	}
	ticker := time.NewTicker(heartbeat)
	defer ticker.Stop()
	// Deltas do not change the job's row, which the watcher follows:
	// while the answer is streamed, they are read on a tick of their own.
	var deltaTick <-chan time.Time
	if s.streams {
		t := time.NewTicker(deltaPollInterval)
		defer t.Stop()
		deltaTick = t.C
	}
	terminal := s.job.Terminal()
	for {
		_, err := s.drain(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.h.logger.Warn("event stream ended", "job", s.job.ID, "request_id", RequestID(ctx), "error", err)
			}
			return
		}
		// A terminal status is written with its event: once the job is
		// seen terminal, a drain after that has sent the event. A job
		// retried since its last terminal event goes on.
		if terminal {
			return
		}
		select {
		case st, ok := <-sub.C():
			if !ok || st.Status == "" {
				return // shutting down, or the job was deleted
			}
			terminal = st.Status.Terminal()
		case <-deltaTick:
		case <-ticker.C:
			s.writeDeadline()
			if _, err := s.c.Writer.WriteString(": keep-alive\n\n"); err != nil || s.rc.Flush() != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// drain sends the job's events after the last one sent, and reports
// whether the last of them is the job's terminal event.
func (s *eventStream) drain(ctx context.Context) (bool, error) {
	if err := s.drainDeltas(ctx); err != nil {
		return false, err
	}
	ended := false
	for {
		evs, err := s.h.events.JobEvents(ctx, s.job.ID, s.after, eventsBatch)
		if err != nil {
			return false, err
		}
		for _, e := range evs {
			if e.Kind == jobs.EventCompleted || e.Kind == jobs.EventFailed {
				// The answer's last pieces were written before the
				// job ended: they come before its end.
				if err := s.drainDeltas(ctx); err != nil {
					return false, err
				}
			}
			if err := s.send(ctx, e); err != nil {
				return false, err
			}
			s.after = e.Seq
			ended = e.Kind == jobs.EventCompleted || e.Kind == jobs.EventFailed
		}
		if len(evs) < eventsBatch {
			return ended, nil
		}
	}
}

// streamWriteTimeout is how long one write of a stream may take: a client
// that stops reading is cut off then, freeing its subscription.
const streamWriteTimeout = 30 * time.Second

// writeDeadline gives the next write streamWriteTimeout.
func (s *eventStream) writeDeadline() {
	_ = s.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
}

// send writes one event as its webhook body (docs/webhooks.md), the
// job's documents taken from its stored record.
func (s *eventStream) send(ctx context.Context, e store.JobEvent) error {
	snap, err := e.Job()
	if err != nil {
		return fmt.Errorf("event %d: %w", e.Seq, err)
	}
	if snap.Status.Terminal() && s.job.Status != snap.Status {
		// The result and usage come with the terminal status.
		job, err := s.h.jobs.GetJob(ctx, s.job.ID)
		if err != nil {
			return err
		}
		s.job = job
	}
	if snap, err = snap.WithDocuments(s.job); err != nil {
		return err
	}
	if snap.Result != nil {
		if snap.Result, err = s.h.views.linkResultFile(ctx, s.job, snap.Result); err != nil {
			return err
		}
	}
	svc, ok := jobs.ServiceOf(s.job.Service)
	if !ok {
		return errors.New("unknown service " + string(s.job.Service))
	}
	body, err := jobs.WebhookBody(jobs.EventName(svc, e.Kind), snap)
	if err != nil {
		return err
	}
	s.writeDeadline()
	return s.write(e.Seq, s.delta, jobs.EventName(svc, e.Kind), body)
}

// write sends one event; its id is the event's seq, and on a streamed
// job's stream the delta's after a dot.
func (s *eventStream) write(seq, delta int, name string, body []byte) error {
	id := strconv.Itoa(seq)
	if s.streams {
		id += "." + strconv.Itoa(delta)
	}
	s.writeDeadline()
	if _, err := fmt.Fprintf(s.c.Writer, "id: %s\nevent: %s\ndata: %s\n\n", id, name, body); err != nil {
		return err
	}
	return s.rc.Flush()
}

// deltaPollInterval is how often a streamed job's stream reads new
// pieces of its answer.
const deltaPollInterval = 100 * time.Millisecond

// drainDeltas sends the pieces of the answer written since the last one
// sent, each as an llm-task.delta event; a piece of a new provider call
// comes after an llm-task.restarted event: the answer starts again.
func (s *eventStream) drainDeltas(ctx context.Context) error {
	if !s.streams {
		return nil
	}
	for {
		deltas, err := s.h.events.JobDeltas(ctx, s.job.ID, s.delta, eventsBatch)
		if err != nil {
			return err
		}
		for _, d := range deltas {
			if !s.calls.current(d.CallID) {
				s.delta = d.Seq
				continue
			}
			if s.call != "" && d.CallID != s.call {
				if err := s.sendPiece(s.delta, EventRestarted, deltaAttributes{Provider: d.Provider}); err != nil {
					return err
				}
			}
			s.call, s.delta = d.CallID, d.Seq
			if err := s.sendPiece(d.Seq, EventDelta, deltaAttributes{Provider: d.Provider, Text: d.Text}); err != nil {
				return err
			}
		}
		if len(deltas) < eventsBatch {
			return nil
		}
	}
}

// callOrder tells the provider calls of a streamed answer apart as their
// pieces are read: a call whose first piece comes after another's
// replaces it, and the pieces an abandoned attempt still writes after
// that are left out.
type callOrder struct {
	seen   map[string]bool
	newest string
}

// current reports whether a piece of call belongs to the newest call,
// which it makes the newest if it is new.
func (o *callOrder) current(call string) bool {
	if call == o.newest {
		return true
	}
	if o.seen[call] {
		return false
	}
	if o.seen == nil {
		o.seen = map[string]bool{}
	}
	o.seen[call], o.newest = true, call
	return true
}

// The events of a streamed answer (docs/api.md, Streamed answers).
const (
	// EventDelta carries a new piece of the answer.
	EventDelta jobs.EventKind = "delta"
	// EventRestarted says the answer starts again, from another call of
	// a provider (a retry, or a failover to another provider): the text
	// streamed so far is dropped.
	EventRestarted jobs.EventKind = "restarted"
)

// deltaAttributes are the attributes of a streamed answer's event.
type deltaAttributes struct {
	Provider string `json:"provider"`
	Text     string `json:"text,omitempty"`
}

// sendPiece sends an event of the streamed answer, with the seq of the
// last delta it includes.
func (s *eventStream) sendPiece(delta int, kind jobs.EventKind, attrs deltaAttributes) error {
	svc, _ := jobs.ServiceOf(s.job.Service)
	name := jobs.EventName(svc, kind)
	body, err := json.Marshal(map[string]any{"event": name, "data": map[string]any{
		"id": s.job.ID, "type": svc.JobType, "attributes": attrs}})
	if err != nil {
		return err
	}
	return s.write(s.after, delta, name, body)
}
