package providertest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Vendor is a fake vendor API for an adapter's tests, closed when the test
// ends. It answers one request at a time: with the answer Answer set, if
// any, else with the handler; a request it has no answer for fails the
// test.
type Vendor struct {
	// URL is the server's root, without a trailing slash.
	URL string

	t       testing.TB
	server  *httptest.Server
	mu      sync.Mutex
	checks  []func(*http.Request)
	handler http.HandlerFunc
	answer  *answer
	count   int
}

type answer struct {
	status int
	body   string
	header []string
}

// NewVendor starts a fake vendor API answering with handler (nil: none
// yet, see Handle and Answer).
func NewVendor(t testing.TB, handler http.HandlerFunc) *Vendor {
	t.Helper()
	v := &Vendor{t: t, handler: handler}
	v.server = httptest.NewServer(http.HandlerFunc(v.serve))
	v.URL = v.server.URL
	t.Cleanup(v.server.Close)
	return v
}

func (v *Vendor) serve(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.count++
	for _, check := range v.checks {
		check(r)
	}
	if a := v.answer; a != nil {
		for i := 0; i+1 < len(a.header); i += 2 {
			w.Header().Set(a.header[i], a.header[i+1])
		}
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
		return
	}
	if v.handler == nil {
		v.t.Errorf("unexpected request %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusNotFound)
		return
	}
	v.handler(w, r)
}

// Check runs check on every request before it is answered, whatever the
// answer: the vendor's checks of what the adapter sends.
func (v *Vendor) Check(check func(r *http.Request)) *Vendor {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.checks = append(v.checks, check)
	return v
}

// RequireAuth checks that every request carries value in header (the
// adapter's credentials).
func (v *Vendor) RequireAuth(header, value string) *Vendor {
	return v.Check(func(r *http.Request) {
		assert.Equal(v.t, value, r.Header.Get(header), "the credentials in %s", header)
	})
}

// Handle sets what answers the requests.
func (v *Vendor) Handle(h http.HandlerFunc) *Vendor {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.handler = h
	return v
}

// Answer makes every request answer status with body and the header's
// name, value pairs (a failing vendor).
func (v *Vendor) Answer(status int, body string, header ...string) *Vendor {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.answer = &answer{status: status, body: body, header: header}
	return v
}

// Requests is how many requests arrived.
func (v *Vendor) Requests() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.count
}

// Client is a client for the server.
func (v *Vendor) Client() *http.Client { return v.server.Client() }

// Close stops the server: requests then get no answer.
func (v *Vendor) Close() { v.server.Close() }

// Routes answers each request with the handler of its "METHOD /path"; any
// other request fails the test and is answered 404.
func Routes(t testing.TB, routes map[string]http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h, ok := routes[r.Method+" "+r.URL.Path]
		if !ok {
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			w.WriteHeader(http.StatusNotFound)
			return
		}
		h(w, r)
	}
}

// WriteJSON answers 200 with body as JSON.
func WriteJSON(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, body)
}
