package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
)

// errCredentialRefused is the API's 401 to a session's credential: the
// key was revoked or expired, and the session ends.
var errCredentialRefused = errors.New("console: the API refused the session's credential")

// answer is the API's response to one in-process request.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// apiError is the API's error body (docs/api.md, Errors).
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// message is the API's error message, or a generic one.
func (a *answer) message() string {
	var e apiError
	if json.Unmarshal(a.Body, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return http.StatusText(a.Status)
}

// call serves method path?query through the API as credential, in r's
// context and with r's host (links in the answer name the gateway as
// the person reaches it). body, if not nil, is sent as JSON.
func (c *Console) call(r *http.Request, credential, method, path string, query url.Values, body any) (*answer, error) {
	var reader io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		reader = bytes.NewReader(b)
	}
	target := path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(r.Context(), method, target, reader)
	if err != nil {
		return nil, err
	}
	if splitsSegment(req) {
		return &answer{Status: http.StatusNotFound, Header: http.Header{}}, nil
	}
	req.Host, req.RemoteAddr, req.TLS = r.Host, r.RemoteAddr, r.TLS
	req.Header.Set("Authorization", "Bearer "+credential)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := &recorder{header: http.Header{}}
	c.cfg.API.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &answer{Status: rec.status, Header: rec.header, Body: rec.body.Bytes()}, nil
}

// splitsSegment reports whether req's path holds an escaped slash: an
// id a person typed with "/" in it would otherwise reach another route
// of the API, whose router matches the unescaped path.
func splitsSegment(req *http.Request) bool { return req.URL.RawPath != "" }

// callAs is call as s, ending s when the API refuses its credential.
func (c *Console) callAs(r *http.Request, s *session, method, path string, query url.Values, body any) (*answer, error) {
	a, err := c.call(r, s.credential, method, path, query, body)
	if err == nil && a.Status == http.StatusUnauthorized {
		return nil, errCredentialRefused
	}
	return a, err
}

// recorder is the response writer of an in-process API request.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}
