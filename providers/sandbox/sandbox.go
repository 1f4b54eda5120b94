// Package sandbox is the "sandbox" adapter: a simulated provider for
// development and tests. It calls no AI service; its results are made up,
// shaped like real ones and deterministic for a given job input. The only
// network request it makes is a HEAD of the job's media URL.
package sandbox

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/internal/settings"
)

// Settings are the sandbox adapter's provider settings.
type Settings struct {
	// LatencyMS is the simulated time a job takes, in milliseconds.
	LatencyMS int `json:"latency_ms"`
	// FailRate is the share of calls (0..1) that fail with a retryable error.
	FailRate float64 `json:"fail_rate"`
}

// Adapter simulates one provider.
type Adapter struct {
	provider *providers.Provider
	settings Settings
	client   *http.Client
	// wait sleeps for d or until ctx ends; tests replace it.
	wait func(ctx context.Context, d time.Duration) error
	// draw returns a number in [0, 1) for the fail_rate draw.
	draw func() float64
}

// New builds the sandbox adapter of p, validating p.Settings; of the
// options (providers.Option) it uses the media client, or else the HTTP
// client, for the HEAD of media URLs.
func New(p *providers.Provider, opts ...providers.Option) (*Adapter, error) {
	o := providers.NewOptions(opts...)
	var s Settings
	if err := settings.Decode(p.Settings, &s); err != nil {
		return nil, err
	}
	if s.LatencyMS < 0 {
		return nil, fmt.Errorf("settings: latency_ms %d is negative; use milliseconds >= 0", s.LatencyMS)
	}
	if s.FailRate < 0 || s.FailRate > 1 {
		return nil, fmt.Errorf("settings: fail_rate %v is out of range; use a number from 0 (never fail) to 1 (always fail)", s.FailRate)
	}
	return &Adapter{
		provider: p,
		settings: s,
		client:   cmp.Or(o.MediaClient, o.Client(10*time.Second)),
		wait:     sleep,
		draw:     rand.Float64,
	}, nil
}

// Services are the four services: it simulates each of them.
func (a *Adapter) Services() []jobs.ServiceID {
	return []jobs.ServiceID{jobs.Transcriptions, jobs.Translations, jobs.VideoAnalyses, jobs.LLMTasks}
}

// VendorRetention is PurgeNotRetained: the sandbox keeps nothing of a call
// (docs/providers.md, Deleting a job's vendor copy).
func (a *Adapter) VendorRetention() providers.PurgeOutcome { return providers.PurgeNotRetained }

// ExpectedDuration is latency_ms: the sandbox knows how long it takes.
func (a *Adapter) ExpectedDuration() time.Duration {
	return time.Duration(a.settings.LatencyMS) * time.Millisecond
}

// Run simulates the call: it may fail per fail_rate, checks the media URL,
// spends latency_ms (less the share done before call.ResumeFrom) reporting
// progress, and returns a made-up result of the service's shape.
func (a *Adapter) Run(ctx context.Context, call providers.Call) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if a.settings.FailRate > 0 && a.draw() < a.settings.FailRate {
		return nil, providers.Retryable(jobs.CodeProviderUnavailable,
			fmt.Sprintf("sandbox provider %q: simulated failure (fail_rate %g)", a.provider.ID, a.settings.FailRate), nil)
	}
	start := min(max(call.ResumeFrom, 0), 100)
	call.Progress(start)

	job, err := a.prepare(ctx, call)
	if err != nil {
		return nil, err
	}
	var pieces []string
	if t, ok := job.(*llmTask); ok && call.Stream != nil {
		pieces = t.pieces()
	}
	if err := a.spend(ctx, call, start, pieces); err != nil {
		return nil, err
	}
	if t, ok := job.(*translation); ok && call.Media != nil && call.ResultFile != "" {
		if err := t.translateDocument(call.Media, call.ResultFile); err != nil {
			return nil, err
		}
	}
	result, err := json.Marshal(job.result())
	if err != nil {
		return nil, fmt.Errorf("sandbox: encode result: %w", err)
	}
	return result, nil
}

// job is a decoded call, ready to produce its result.
type job interface{ result() any }

// prepare decodes the call and checks its media URL.
func (a *Adapter) prepare(ctx context.Context, call providers.Call) (job, error) {
	svc := call.Service
	size := int64(-1)
	head := func(url string) error {
		if call.Media != nil {
			// The gateway fetched and checked it already.
			size = call.Media.Size
			return nil
		}
		n, err := media.Head(ctx, a.client, svc, url)
		size = n
		return providers.MediaError(err)
	}
	probed := 0.0
	if call.Media != nil {
		probed = call.Media.Duration
	}
	pricing := call.Capability().Pricing

	switch svc {
	case jobs.Transcriptions:
		j := &transcription{pricing: pricing}
		if err := call.Decode(&j.in, &j.opts); err != nil {
			return nil, err
		}
		if err := head(j.in.URL); err != nil {
			return nil, err
		}
		j.size, j.probed, j.seed = size, probed, newSeed(svc, j.in)
		return j, nil
	case jobs.Translations:
		j := &translation{pricing: pricing}
		if err := call.Decode(&j.in, &j.opts); err != nil {
			return nil, err
		}
		if j.in.Type == "document" {
			if err := head(j.in.URL); err != nil {
				return nil, err
			}
		}
		j.size, j.seed = size, newSeed(svc, j.in)
		return j, nil
	case jobs.VideoAnalyses:
		j := &videoAnalysis{pricing: pricing}
		if err := call.Decode(&j.in, &j.opts); err != nil {
			return nil, err
		}
		if err := head(j.in.URL); err != nil {
			return nil, err
		}
		j.size, j.probed, j.seed = size, probed, newSeed(svc, j.in)
		return j, nil
	case jobs.LLMTasks:
		j := &llmTask{pricing: pricing, provider: a.provider.Name, models: call.Capability().Models}
		if err := call.Decode(&j.in, &j.opts); err != nil {
			return nil, err
		}
		if j.in.Type == "document" {
			if err := head(j.in.URL); err != nil {
				return nil, err
			}
		}
		j.size, j.seed = size, newSeed(svc, j.in)
		return j, nil
	}
	return nil, providers.Permanent(jobs.CodeUnsupportedInput,
		fmt.Sprintf("sandbox: unknown service %q", svc), nil)
}

// steps is how many progress reports a full simulated job makes.
const steps = 10

// spend waits out latency_ms from progress start to 100, reporting each
// tenth; time already spent by an earlier attempt is skipped. Pieces of a
// streamed answer, when given, are handed out along the way instead.
func (a *Adapter) spend(ctx context.Context, call providers.Call, start int, pieces []string) error {
	if len(pieces) > 0 {
		return a.stream(ctx, call, start, pieces)
	}
	total := time.Duration(a.settings.LatencyMS) * time.Millisecond
	if total == 0 || start >= 100 {
		if start < 100 {
			call.Progress(100)
		}
		return nil
	}
	prev := start
	for p := (start/steps + 1) * steps; p <= 100; p += steps {
		if err := a.wait(ctx, total*time.Duration(p-prev)/100); err != nil {
			return err
		}
		call.Progress(p)
		prev = p
	}
	return nil
}

// stream hands pieces to call.Stream evenly over what is left of
// latency_ms, the last at its end, reporting progress as spend does by
// the tenth (docs/providers.md, sandbox). A retried call streams the
// whole answer again, in the time left.
func (a *Adapter) stream(ctx context.Context, call providers.Call, start int, pieces []string) error {
	total := time.Duration(a.settings.LatencyMS) * time.Millisecond
	left := total * time.Duration(100-min(start, 100)) / 100
	n := len(pieces)
	reported := start
	var spent time.Duration
	for i, piece := range pieces {
		if due := left * time.Duration(i+1) / time.Duration(n); due > spent {
			if err := a.wait(ctx, due-spent); err != nil {
				return err
			}
			spent = due
		} else if err := ctx.Err(); err != nil {
			return err
		}
		call.Stream(piece)
		if p := (start + (100-start)*(i+1)/n) / steps * steps; p > reported {
			call.Progress(p)
			reported = p
		}
	}
	return nil
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
