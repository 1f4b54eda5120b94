package console

import (
	"net/http"
	"net/url"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// jobEvents serves GET /console/jobs/{id}/events?service=…: the job's
// event stream (GET /v1/{resource}/{id}/events, docs/api.md, Following a
// job live) as the session, passed through as it comes, for the job
// page's live status (assets/live.js). EventSource cannot send the
// session's credential itself: the console does.
func (c *Console) jobEvents(w http.ResponseWriter, r *http.Request, s *session) error {
	svc, ok := jobs.LookupService(r.URL.Query().Get("service"))
	if !ok {
		c.problem(w, http.StatusNotFound, s, "No such service", "The events of a job need its service.")
		return nil
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, svc.Endpoint()+"/"+url.PathEscape(r.PathValue("id"))+"/events", nil)
	if err != nil {
		return err
	}
	if splitsSegment(req) {
		w.WriteHeader(http.StatusNotFound)
		return nil
	}
	req.Host, req.RemoteAddr, req.TLS = r.Host, r.RemoteAddr, r.TLS
	req.Header.Set("Authorization", "Bearer "+s.credential)
	req.Header.Set("Accept", "text/event-stream")
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		req.Header.Set("Last-Event-ID", id)
	}
	out := &eventsThrough{w: w, header: http.Header{}}
	c.cfg.API.ServeHTTP(out, req)
	switch out.status {
	case http.StatusOK:
		return nil
	case http.StatusUnauthorized:
		return errCredentialRefused
	}
	// An EventSource takes any other answer as the stream's end.
	w.WriteHeader(out.status)
	return nil
}

// eventsThrough passes a 200 event stream to w as it comes (Unwrap lets
// the API's handler flush it and lift its deadlines); any other answer is
// dropped, its status kept.
type eventsThrough struct {
	w      http.ResponseWriter
	header http.Header
	status int
}

func (e *eventsThrough) Header() http.Header { return e.header }

func (e *eventsThrough) WriteHeader(status int) {
	if e.status != 0 {
		return
	}
	e.status = status
	if status == http.StatusOK {
		for _, name := range []string{"Content-Type", "Cache-Control", "X-Accel-Buffering"} {
			e.w.Header().Set(name, e.header.Get(name))
		}
		e.w.WriteHeader(http.StatusOK)
	}
}

func (e *eventsThrough) Write(b []byte) (int, error) {
	e.WriteHeader(http.StatusOK)
	if e.status != http.StatusOK {
		return len(b), nil
	}
	return e.w.Write(b)
}

// Unwrap is the browser's writer, for http.ResponseController.
func (e *eventsThrough) Unwrap() http.ResponseWriter { return e.w }

func (e *eventsThrough) Flush() {
	if f, ok := e.w.(http.Flusher); ok && e.status == http.StatusOK {
		f.Flush()
	}
}
