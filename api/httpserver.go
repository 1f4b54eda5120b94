package api

import (
	"net/http"
	"time"
)

// ServerTimeouts bound how long an HTTP server waits on a client.
type ServerTimeouts struct {
	// ReadHeader: the request line and headers.
	ReadHeader time.Duration
	// Read: the whole request, body included.
	Read time.Duration
	// Write: from the request's headers read to the answer written.
	Write time.Duration
	// Idle: a kept-alive connection between requests.
	Idle time.Duration
}

// DefaultServerTimeouts are those of every HTTP server the gateway runs
// (docs/operations.md). Read takes an 8 MiB body sent at 2.3 Mbit/s or more
// (vendor callbacks, up to 32 MiB, get 2 minutes once their token checks);
// Write is above Read plus the longest handler (a create waiting
// 60 s on Prefer: wait, docs/api.md, Waiting for a job).
var DefaultServerTimeouts = ServerTimeouts{
	ReadHeader: 10 * time.Second,
	Read:       30 * time.Second,
	Write:      2 * time.Minute,
	Idle:       2 * time.Minute,
}

// NewHTTPServer is the HTTP server the gateway serves handler with.
func NewHTTPServer(handler http.Handler, t ServerTimeouts) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
	}
}
