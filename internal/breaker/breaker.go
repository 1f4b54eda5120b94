// Package breaker is the circuit breaker of a provider for one service
// (docs/providers.md, Circuit breakers): a pure state machine over the
// outcomes of provider calls. It does no I/O and reads no clock; the store
// keeps a Breaker per provider and service and applies these functions
// under a row lock, so every worker shares it.
package breaker

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// State is a breaker's state.
type State string

// Breaker states. A closed breaker lets every call through, an open one
// none, a half-open one a few probe calls.
const (
	Closed   State = "closed"
	Open     State = "open"
	HalfOpen State = "half_open"
)

// Outcome is how a provider call ended, as far as the breaker cares.
type Outcome int

// Outcomes. A failure is a retryable provider error (5xx, timeout,
// connection error, 429); a client's error counts as neither.
const (
	Success Outcome = iota
	Failure
)

// Call is the outcome of one call and when it ended.
type Call struct {
	Outcome Outcome
	At      time.Time
}

// Config is a breaker's settings (the catalog's circuit_breaker blocks).
type Config struct {
	// Disabled turns the breaker off: it never opens.
	Disabled bool
	// FailureRate opens the breaker when the share of failures (0..1) in
	// the window reaches it, once the window holds MinCalls calls.
	FailureRate float64
	MinCalls    int
	Window      time.Duration
	// ConsecutiveFailures opens the breaker after that many failures in a
	// row; 0 never.
	ConsecutiveFailures int
	// OpenFor is how long the breaker stays open the first time; each
	// reopening without a close in between doubles it, up to MaxOpenFor.
	OpenFor    time.Duration
	MaxOpenFor time.Duration
	// Probes is how many calls a half-open breaker lets through at a
	// time, and CloseAfter how many of them must succeed to close it.
	Probes     int
	CloseAfter int
}

// Defaults are the deployment's defaults: on and conservative, like
// resilience4j's (a failure rate of 50 % over at least 20 calls in 60 s).
func Defaults() Config {
	return Config{
		FailureRate: 0.5,
		MinCalls:    20,
		Window:      60 * time.Second,
		OpenFor:     30 * time.Second,
		MaxOpenFor:  10 * time.Minute,
		Probes:      3,
		CloseAfter:  3,
	}
}

// buckets is how many buckets a window is counted in.
const buckets = 10

// Bucket counts the calls that ended in one slice of the window.
type Bucket struct {
	// Index numbers the slice: its start is Index × the bucket width
	// since the Unix epoch.
	Index    int64 `json:"i"`
	Calls    int   `json:"c"`
	Failures int   `json:"f"`
}

// Window is the sliding window of recent outcomes, counted in buckets.
type Window struct {
	WidthMS int64    `json:"w"`
	Buckets []Bucket `json:"b,omitempty"`
}

// Breaker is the state of one provider's breaker for one service.
type Breaker struct {
	State State
	// Since is when the breaker entered its state (zero: never changed).
	Since time.Time
	// OpenUntil is when an open breaker lets probes through.
	OpenUntil time.Time
	// Opens counts the openings since the breaker last closed.
	Opens               int
	ConsecutiveFailures int
	// Probes counts the probe calls let through in half-open since
	// ProbesAt, and ProbeSuccesses the probes that succeeded.
	Probes         int
	ProbeSuccesses int
	ProbesAt       time.Time
	Window         Window
	// Forced is the state an operator forced ("" when automatic), by
	// whom and when.
	Forced   State
	ForcedBy string
	ForcedAt time.Time
}

// Transition is a change of state; the zero Transition is none.
type Transition struct {
	From, To State
	// Reason says why, for the log.
	Reason string
}

// Changed reports whether t is a change of state.
func (t Transition) Changed() bool { return t.From != t.To }

// state is b's stored state, closed when never set.
func (b Breaker) state() State {
	if b.State == "" {
		return Closed
	}
	return b.State
}

// Effective is the state routing honours at now: the operator's forced
// state, else the stored one, an open breaker turning half-open once its
// interval ended.
func (b Breaker) Effective(now time.Time) State {
	if b.Forced != "" {
		return b.Forced
	}
	if s := b.state(); s != Open || now.Before(b.OpenUntil) {
		return s
	}
	return HalfOpen
}

// NextProbe is when an open breaker lets probes through; zero otherwise.
func (b Breaker) NextProbe(now time.Time) time.Time {
	if b.Forced == "" && b.Effective(now) == Open {
		return b.OpenUntil
	}
	return time.Time{}
}

// Counts are the calls and failures in the window at now.
func (b Breaker) Counts(cfg Config, now time.Time) (calls, failures int) {
	w := b.Window
	if w.WidthMS != width(cfg) {
		return 0, 0
	}
	current := now.UnixMilli() / w.WidthMS
	for _, bk := range w.Buckets {
		if bk.Index > current-buckets && bk.Index <= current {
			calls += bk.Calls
			failures += bk.Failures
		}
	}
	return calls, failures
}

// FailureRate is the share of failures in the window (0 without calls).
func (b Breaker) FailureRate(cfg Config, now time.Time) float64 {
	calls, failures := b.Counts(cfg, now)
	if calls == 0 {
		return 0
	}
	return float64(failures) / float64(calls)
}

// width is the bucket width of cfg's window, in milliseconds.
func width(cfg Config) int64 {
	return max(cfg.Window.Milliseconds()/buckets, 1)
}

// count adds an outcome to the window and drops the buckets it left. A
// call recorded late (successes are recorded in batches) goes to the
// bucket of when it ended, and the newer buckets stay.
func (b *Breaker) count(cfg Config, o Outcome, now time.Time) {
	w := &b.Window
	if w.WidthMS != width(cfg) {
		*w = Window{WidthMS: width(cfg)}
	}
	at := now.UnixMilli() / w.WidthMS
	newest := at
	if n := len(w.Buckets); n > 0 && w.Buckets[n-1].Index > newest {
		newest = w.Buckets[n-1].Index
	}
	kept := w.Buckets[:0]
	for _, bk := range w.Buckets {
		if bk.Index > newest-buckets {
			kept = append(kept, bk)
		}
	}
	w.Buckets = kept
	if at > newest-buckets {
		i, found := slices.BinarySearchFunc(w.Buckets, at, func(bk Bucket, at int64) int { return cmp.Compare(bk.Index, at) })
		if !found {
			w.Buckets = slices.Insert(w.Buckets, i, Bucket{Index: at})
		}
		w.Buckets[i].Calls++
		if o == Failure {
			w.Buckets[i].Failures++
		}
	}
	if o == Failure {
		b.ConsecutiveFailures++
	} else {
		b.ConsecutiveFailures = 0
	}
}

// Record applies the outcome of one call at now. The window and the
// consecutive failures always count it; the state changes only while no
// operator forces one.
func (b Breaker) Record(cfg Config, o Outcome, now time.Time) (Breaker, Transition) {
	b.Window.Buckets = append([]Bucket(nil), b.Window.Buckets...)
	b.count(cfg, o, now)
	if cfg.Disabled || b.Forced != "" {
		return b, Transition{}
	}
	b, t := b.wake(now)
	switch b.state() {
	case Closed:
		calls, failures := b.Counts(cfg, now)
		switch {
		case cfg.ConsecutiveFailures > 0 && b.ConsecutiveFailures >= cfg.ConsecutiveFailures:
			return b.open(cfg, now, "consecutive failures")
		case calls >= max(cfg.MinCalls, 1) && float64(failures) >= cfg.FailureRate*float64(calls):
			return b.open(cfg, now, "failure rate")
		}
	case HalfOpen:
		if o == Failure {
			return b.open(cfg, now, "a probe failed")
		}
		b.ProbeSuccesses++
		if b.ProbeSuccesses >= max(cfg.CloseAfter, 1) {
			b.State, b.Since = Closed, now
			b.Opens, b.Probes, b.ProbeSuccesses, b.ConsecutiveFailures = 0, 0, 0, 0
			b.OpenUntil, b.ProbesAt = time.Time{}, time.Time{}
			b.Window.Buckets = nil
			return b, Transition{From: HalfOpen, To: Closed, Reason: "probes succeeded"}
		}
	}
	return b, t
}

// TakeProbe lets one call through a half-open breaker if it has a probe
// left; a closed breaker lets every call through, an open one none.
// Probes taken longer than OpenFor ago without an outcome (their worker
// died) are given back.
func (b Breaker) TakeProbe(cfg Config, now time.Time) (Breaker, bool, Transition) {
	if cfg.Disabled {
		return b, true, Transition{}
	}
	if b.Forced != "" {
		return b, b.Forced != Open, Transition{}
	}
	b, t := b.wake(now)
	switch b.state() {
	case Closed:
		return b, true, t
	case Open:
		return b, false, t
	}
	if !b.ProbesAt.IsZero() && now.Sub(b.ProbesAt) >= cfg.OpenFor {
		b.Probes = 0
	}
	if b.Probes >= max(cfg.Probes, 1) {
		return b, false, t
	}
	b.Probes++
	b.ProbesAt = now
	return b, true, t
}

// wake turns an open breaker half-open once its interval ended.
func (b Breaker) wake(now time.Time) (Breaker, Transition) {
	if b.state() != Open || now.Before(b.OpenUntil) {
		return b, Transition{}
	}
	b.State, b.Since = HalfOpen, now
	b.Probes, b.ProbeSuccesses, b.ProbesAt = 0, 0, time.Time{}
	return b, Transition{From: Open, To: HalfOpen, Reason: "open interval ended"}
}

// open opens the breaker for its interval: OpenFor doubled for each
// opening since the last close, at most MaxOpenFor.
func (b Breaker) open(cfg Config, now time.Time, reason string) (Breaker, Transition) {
	from := b.state()
	b.Opens++
	b.State, b.Since = Open, now
	b.OpenUntil = now.Add(OpenInterval(cfg, b.Opens))
	b.Probes, b.ProbeSuccesses, b.ProbesAt, b.ConsecutiveFailures = 0, 0, time.Time{}, 0
	return b, Transition{From: from, To: Open, Reason: reason}
}

// OpenInterval is how long the opens-th opening since a close lasts.
func OpenInterval(cfg Config, opens int) time.Duration {
	d := cfg.OpenFor
	if d <= 0 {
		d = time.Second
	}
	limit := cfg.MaxOpenFor
	if limit < d {
		limit = d
	}
	factor := math.Pow(2, float64(max(opens-1, 0)))
	if float64(d)*factor >= float64(limit) {
		return limit
	}
	return time.Duration(float64(d) * factor)
}

// Force records an operator's forced state (Open or Closed; "" returns
// the breaker to automatic) by whom at now. Returning to automatic starts
// closed, with a fresh window; who did it stays recorded.
func (b Breaker) Force(state State, by string, now time.Time) Breaker {
	if state == "" {
		b = Breaker{State: Closed, Since: now, Window: Window{WidthMS: b.Window.WidthMS}}
	}
	b.Forced, b.ForcedBy, b.ForcedAt = state, by, now
	return b
}
