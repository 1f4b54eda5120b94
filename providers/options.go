package providers

import (
	"net/http"
	"os"
	"time"
)

// Option is what a vendor adapter's constructor takes besides its
// provider: every adapter has New(p *Provider, opts ...Option), reads its
// settings (base_url and api_key_env included) from p.Settings, and takes
// from the options what is not the catalog's (docs/providers.md, Writing
// an adapter). An adapter ignores the options it has no use for.
type Option func(*Options)

// Options are the applied Option values; a zero field leaves the
// adapter's default.
type Options struct {
	// HTTPClient calls the provider's API.
	HTTPClient *http.Client
	// MediaClient fetches the job's media, for the adapters that fetch it
	// themselves (the gateway passes one that refuses internal
	// addresses); nil: HTTPClient.
	MediaClient *http.Client
	// LookupEnv reads the variable api_key_env names; os.LookupEnv unless
	// set.
	LookupEnv func(string) (string, bool)
	// PollInterval is the first wait between status reads of an
	// asynchronous adapter's Run.
	PollInterval time.Duration
	// Callbacks: the gateway takes vendor callbacks (docs/providers.md,
	// Vendor callbacks), so adapters whose vendor can post results back
	// are built in that mode.
	Callbacks bool
}

// WithHTTPClient sets the client for the provider's API.
func WithHTTPClient(c *http.Client) Option { return func(o *Options) { o.HTTPClient = c } }

// WithMediaClient sets the client for fetching the job's media.
func WithMediaClient(c *http.Client) Option { return func(o *Options) { o.MediaClient = c } }

// WithLookupEnv replaces os.LookupEnv for reading the API key.
func WithLookupEnv(f func(string) (string, bool)) Option {
	return func(o *Options) { o.LookupEnv = f }
}

// WithPollInterval sets the first wait between status reads.
func WithPollInterval(d time.Duration) Option { return func(o *Options) { o.PollInterval = d } }

// WithCallbacks builds the adapters whose vendor can post results back in
// that mode.
func WithCallbacks() Option { return func(o *Options) { o.Callbacks = true } }

// NewOptions applies opts.
func NewOptions(opts ...Option) Options {
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	return o
}

// Client is HTTPClient, or a new client with the adapter's default
// timeout.
func (o Options) Client(timeout time.Duration) *http.Client {
	if o.HTTPClient != nil {
		return o.HTTPClient
	}
	return &http.Client{Timeout: timeout}
}

// Poll is PollInterval, or the adapter's default.
func (o Options) Poll(def time.Duration) time.Duration {
	if o.PollInterval > 0 {
		return o.PollInterval
	}
	return def
}
