package console

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/ai-job-gateway/gateway/app/batches"
)

// batchRefusalsShown is how many refused items the batch page lists.
const batchRefusalsShown = 100

// refusal is a line of GET /v1/batches/{id}/errors (docs/api.md,
// Batches).
type refusal struct {
	Index    int    `json:"index"`
	Line     *int   `json:"line"`
	CustomID string `json:"custom_id"`
	Status   int    `json:"status"`
	Error    struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// batchPage is templates/batches.html's data.
type batchPage struct {
	ID    string
	Batch *batches.Document
	// Counts are the batch's counts in a fixed order.
	Counts   []batchCount
	Refusals []refusal
	// More says there are refused items past those listed.
	More  bool
	Error string
}

type batchCount struct {
	Name  string
	Count int
}

// batchCountNames orders a batch's counts (docs/api.md, Batches).
var batchCountNames = []string{"total", "read", "pending", "processing", "completed", "failed", "refused"}

// batch serves GET /console/batches?id=…: the API lists no batches, so
// the page opens one by its id: GET /v1/batches/{id} and its first
// refused items.
func (c *Console) batch(w http.ResponseWriter, r *http.Request, s *session) error {
	p := batchPage{ID: r.URL.Query().Get("id")}
	if p.ID == "" {
		c.render(w, http.StatusOK, "batches", layout{Title: "Batches", Nav: "batches", Tenant: s.Tenant, CSRF: s.CSRFToken, Page: p})
		return nil
	}
	path := "/v1/batches/" + url.PathEscape(p.ID)
	a, err := c.callAs(r, s, http.MethodGet, path, nil, nil)
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		p.Error = a.message()
	} else {
		doc, err := decodeData[batches.Document](a.Body)
		if err != nil {
			return err
		}
		p.Batch = &doc
		for _, name := range batchCountNames {
			if n, ok := doc.Attributes.Counts[name]; ok {
				p.Counts = append(p.Counts, batchCount{Name: name, Count: n})
			}
		}
		if p.Refusals, p.More, err = c.batchRefusals(r, s, path+"/errors"); err != nil {
			return err
		}
	}
	c.render(w, a.Status, "batches", layout{Title: "Batches", Nav: "batches", Tenant: s.Tenant, CSRF: s.CSRFToken, Page: p})
	return nil
}

// batchRefusals reads the first batchRefusalsShown lines of path (GET
// /v1/batches/{id}/errors), stopping the stream there.
func (c *Console) batchRefusals(r *http.Request, s *session, path string) ([]refusal, bool, error) {
	lines := &lineLimiter{header: http.Header{}, max: batchRefusalsShown + 1}
	if err := c.stream(r, s, path, lines); err != nil {
		return nil, false, err
	}
	if lines.status != http.StatusOK {
		return nil, false, nil // the batch itself was read: shown without its refusals
	}
	var out []refusal
	sc := bufio.NewScanner(bytes.NewReader(lines.body.Bytes()))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() && len(out) < lines.max {
		var item refusal
		if err := json.Unmarshal(sc.Bytes(), &item); err != nil {
			break // a line cut by the limit
		}
		out = append(out, item)
	}
	if len(out) > batchRefusalsShown {
		return out[:batchRefusalsShown], true, nil
	}
	return out, false, nil
}

// batchResults serves GET /console/batches/{id}/results: GET
// /v1/batches/{id}/results as the session, streamed to the browser as a
// download while the API writes it.
func (c *Console) batchResults(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	out := &passThrough{w: w, header: http.Header{}, filename: "batch-" + id + "-results.jsonl"}
	if err := c.stream(r, s, "/v1/batches/"+url.PathEscape(id)+"/results", out); err != nil {
		return err
	}
	if out.status != http.StatusOK {
		c.problem(w, out.status, s, "The gateway refused", (&answer{Status: out.status, Body: out.body.Bytes()}).message())
	}
	return nil
}

// stream serves GET path through the API as s into out, as call does,
// without holding the whole answer; errCredentialRefused on a 401.
func (c *Console) stream(r *http.Request, s *session, path string, out interface {
	http.ResponseWriter
	statusCode() int
}) error {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if splitsSegment(req) {
		out.WriteHeader(http.StatusNotFound)
		return nil
	}
	req.Host, req.RemoteAddr, req.TLS = r.Host, r.RemoteAddr, r.TLS
	req.Header.Set("Authorization", "Bearer "+s.credential)
	req.Header.Set("Accept", "application/x-ndjson, application/json")
	c.cfg.API.ServeHTTP(out, req)
	if out.statusCode() == http.StatusUnauthorized {
		return errCredentialRefused
	}
	return nil
}

// errEnough stops a stream the console read enough of: the API's
// handler takes a failed write as the client gone.
var errEnough = errors.New("console: read enough of the stream")

// lineLimiter keeps an answer's first max lines.
type lineLimiter struct {
	header http.Header
	status int
	body   bytes.Buffer
	max    int
	lines  int
}

func (l *lineLimiter) Header() http.Header { return l.header }
func (l *lineLimiter) statusCode() int     { return l.status }

func (l *lineLimiter) WriteHeader(status int) {
	if l.status == 0 {
		l.status = status
	}
}

func (l *lineLimiter) Write(b []byte) (int, error) {
	l.WriteHeader(http.StatusOK)
	if l.lines >= l.max {
		return 0, errEnough
	}
	l.lines += bytes.Count(b, []byte{'\n'})
	return l.body.Write(b)
}

func (l *lineLimiter) Flush() {}

// passThrough writes a 200 answer to w as an attachment, as it comes,
// with the console's headers and the API's Content-Type; any other
// answer is kept for a page that says why.
type passThrough struct {
	w        http.ResponseWriter
	header   http.Header
	filename string
	status   int
	body     bytes.Buffer
}

func (p *passThrough) Header() http.Header { return p.header }
func (p *passThrough) statusCode() int     { return p.status }

func (p *passThrough) WriteHeader(status int) {
	if p.status != 0 {
		return
	}
	p.status = status
	if status == http.StatusOK {
		p.w.Header().Set("Content-Type", p.header.Get("Content-Type"))
		p.w.Header().Set("Content-Disposition", `attachment; filename="`+p.filename+`"`)
		p.w.WriteHeader(http.StatusOK)
	}
}

func (p *passThrough) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	if p.status == http.StatusOK {
		return p.w.Write(b)
	}
	return p.body.Write(b)
}

func (p *passThrough) Flush() {
	if f, ok := p.w.(http.Flusher); ok && p.status == http.StatusOK {
		f.Flush()
	}
}
