package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/internal/metrics"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
)

// The media stage (docs/media.md): a job with media has it fetched once,
// into the blob store under work/<job>/, probed, and for transcriptions its
// audio track extracted, before it is routed. Each step is an activity of
// its own, so the job's history shows them, and any worker can run the
// next one: the files live in the blob store, not on the worker.

// MediaInput names a job's media.
type MediaInput struct {
	JobID string `json:"job_id"`
	// Tenant owns the job; its fetches share the tenant's slots
	// (Media.FetchSlots). Empty in jobs started before it was sent.
	Tenant   string          `json:"tenant,omitempty"`
	Service  jobs.ServiceID  `json:"service"`
	Input    json.RawMessage `json:"input"`
	Explicit string          `json:"explicit_provider,omitempty"`
}

// MediaFile is a file of a job's media stage in the blob store.
type MediaFile struct {
	Key         string `json:"key"`
	ContentType string `json:"content_type,omitempty"`
	Size        int64  `json:"size"`
}

// ProbeInput asks for a probe of a fetched media file.
type ProbeInput struct {
	JobID   string         `json:"job_id"`
	Service jobs.ServiceID `json:"service"`
	Source  MediaFile      `json:"source"`
}

// ExtractInput asks for the audio track of a fetched media file.
type ExtractInput struct {
	JobID  string      `json:"job_id"`
	Source MediaFile   `json:"source"`
	Probe  media.Probe `json:"probe"`
	Track  int         `json:"track"`
}

// WorkPrefix is where a job's media stage keeps its files in the blob
// store; they are deleted when the job ends (RemoveJobMedia) or by the
// sweep (SweepWorkFiles).
func WorkPrefix(jobID string) string { return "work/" + jobID + "/" }

// ResultPrefix is where a job's result files live, until the retention
// period ends.
func ResultPrefix(jobID string) string { return "results/" + jobID + "/" }

// Media runs the media stage's steps.
type Media struct {
	// Files holds the media's files between steps.
	Files Blobs
	// Tools runs ffprobe and ffmpeg; nil when they are missing, and jobs
	// whose media must be probed fail.
	Tools *media.Tools
	// Client fetches media (default http.DefaultClient); give it no
	// overall timeout: the fetch heartbeats while bytes arrive.
	Client *http.Client
	// FetchLimits are the slowest transfer and the longest fetch accepted
	// (MaxBytes is set per job from Providers' catalog); zero: none.
	FetchLimits media.Limits
	// FetchSlots caps each tenant's concurrent fetches in this worker;
	// nil: no cap.
	FetchSlots *media.Slots
	Providers  *providers.Registry
	// WorkerID names this worker when it has no media tools.
	WorkerID string
	// Metrics times the steps; nil records none.
	Metrics *metrics.Metrics
}

// FetchMedia streams the job's input.url into the blob store, once per
// job: through the address guard, capped at the largest max_file_size_mb
// among the providers that could take the job (routing then skips those
// whose own limit is smaller), never held whole in memory, within
// FetchLimits. It first waits for one of the tenant's FetchSlots,
// heartbeating; then it heartbeats while bytes arrive, so a stalled
// download times out and is tried again.
func (m *Media) FetchMedia(ctx context.Context, in MediaInput) (_ MediaFile, err error) {
	defer m.timeStep("fetch", time.Now(), &err)
	if m.Files.Store == nil {
		return MediaFile{}, unavailable("this gateway has no blob store for media (docs/media.md: --blob-url)")
	}
	url := jobs.MediaURL(in.Input)
	if url == "" {
		return MediaFile{}, classify(providers.InputError(media.UnreadableCode(in.Service), "input.url is missing", nil))
	}
	scratch, err := m.Files.scratch(in.JobID)
	if err != nil {
		return MediaFile{}, err
	}
	defer os.RemoveAll(scratch)

	stopWaiting := heartbeat(ctx, 0, new(atomic.Int64))
	release, err := m.FetchSlots.Acquire(ctx, in.Tenant)
	stopWaiting()
	if err != nil {
		return MediaFile{}, err
	}

	var received atomic.Int64
	stop := heartbeatWhile(ctx, &received)
	defer stop()
	client := countingClient(m.client(), &received)
	limits := m.FetchLimits
	limits.MaxBytes = policy.MediaCapBytes(m.Providers.Catalog().Providers, in.Service, in.Explicit)
	local := filepath.Join(scratch, "source")
	fetched, err := media.Fetch(ctx, client, in.Service, url, local, limits)
	release() // the upload below is not a fetch
	if err != nil {
		return MediaFile{}, classifyMedia(err)
	}
	file := MediaFile{Key: WorkPrefix(in.JobID) + "source", ContentType: fetched.ContentType, Size: fetched.Size}
	// The upload counts too: a long one keeps heartbeating, a stalled one
	// times out.
	if err := m.Files.putFile(ctx, file.Key, file.ContentType, local, &received); err != nil {
		return MediaFile{}, err
	}
	return file, nil
}

// ProbeMedia runs ffprobe on the fetched media. Media ffprobe cannot read,
// or with neither audio nor video, fails the job (AUDIO_UNREADABLE for
// transcriptions, INPUT_UNREADABLE otherwise).
func (m *Media) ProbeMedia(ctx context.Context, in ProbeInput) (_ media.Probe, err error) {
	defer m.timeStep("probe", time.Now(), &err)
	tools, err := m.tools()
	if err != nil {
		return media.Probe{}, err
	}
	stop := heartbeat(ctx, 0, new(atomic.Int64))
	defer stop()
	source, done, err := m.Files.localCopy(ctx, in.JobID, in.Source)
	if err != nil {
		return media.Probe{}, err
	}
	defer done()
	probe, err := tools.Probe(ctx, in.Service, source)
	if err != nil {
		return media.Probe{}, classifyMedia(err)
	}
	// A video analysis of media without a video stream goes on: its
	// provider decides what it can do with the audio (speech_to_text).
	return probe, nil
}

// ExtractAudio writes the job's audio track as 16 kHz mono WAV into the
// blob store. A missing track or audio that does not decode fails the job
// with AUDIO_UNREADABLE, at once: another provider would fail the same way.
func (m *Media) ExtractAudio(ctx context.Context, in ExtractInput) (_ MediaFile, err error) {
	defer m.timeStep("extract", time.Now(), &err)
	tools, err := m.tools()
	if err != nil {
		return MediaFile{}, err
	}
	stop := heartbeat(ctx, 0, new(atomic.Int64))
	defer stop()
	source, done, err := m.Files.localCopy(ctx, in.JobID, in.Source)
	if err != nil {
		return MediaFile{}, err
	}
	defer done()
	local := filepath.Join(filepath.Dir(source), "audio.wav")
	if err := tools.ExtractAudio(ctx, in.Probe, source, in.Track, local); err != nil {
		return MediaFile{}, classifyMedia(err)
	}
	info, err := os.Stat(local)
	if err != nil {
		return MediaFile{}, err
	}
	file := MediaFile{Key: WorkPrefix(in.JobID) + "audio.wav", ContentType: "audio/wav", Size: info.Size()}
	if err := m.Files.putFile(ctx, file.Key, file.ContentType, local, nil); err != nil {
		return MediaFile{}, err
	}
	return file, nil
}

// classifyMedia turns a failure of the media into the job's error, as a
// provider's failure is turned (classify).
func classifyMedia(err error) error { return classify(providers.MediaError(err)) }

// RemoveJobMedia deletes the job's media stage files once it has ended.
func (m *Media) RemoveJobMedia(ctx context.Context, jobID string) error {
	if m.Files.Store == nil {
		return nil
	}
	_, err := m.Files.Store.DeletePrefix(ctx, WorkPrefix(jobID))
	return err
}

func (m *Media) tools() (media.Tools, error) {
	if m.Tools == nil {
		return media.Tools{}, unavailable(fmt.Sprintf("worker %s cannot process media: ffmpeg and ffprobe are not installed (apt-get install ffmpeg, or make engines)", m.WorkerID))
	}
	return *m.Tools, nil
}

func (m *Media) client() *http.Client {
	if m.Client != nil {
		return m.Client
	}
	return http.DefaultClient
}

// unavailable is the job failure of a gateway that cannot process media.
func unavailable(msg string) error {
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeInvalidInput, nil,
		jobs.Error{Code: jobs.CodeMediaProcessingUnavailable, Message: msg})
}

// heartbeatWhile heartbeats while *received grows: a download that stalls
// stops heartbeating, so Temporal times the attempt out and tries again.
func heartbeatWhile(ctx context.Context, received *atomic.Int64) (stop func()) {
	info := activity.GetInfo(ctx)
	interval := info.HeartbeatTimeout / 2
	if interval <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		last := int64(-1)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				if n := received.Load(); n != last {
					last = n
					activity.RecordHeartbeat(ctx, n)
				}
			}
		}
	}()
	return cancel
}

// countingClient is client with every response body counting the bytes
// read from it into *n.
func countingClient(client *http.Client, n *atomic.Int64) *http.Client {
	c := *client
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err == nil {
			resp.Body = &countingBody{ReadCloser: resp.Body, n: n}
		}
		return resp, err
	})
	return &c
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n.Add(int64(k))
	return k, err
}

// mediaExtension is the file extension a result file of the given media
// type and source URL gets.
func mediaExtension(contentType, rawURL string) string {
	if ext := path.Ext(strings.SplitN(strings.SplitN(rawURL, "?", 2)[0], "#", 2)[0]); ext != "" && len(ext) <= 8 {
		return strings.ToLower(ext)
	}
	switch strings.SplitN(contentType, ";", 2)[0] {
	case "text/plain":
		return ".txt"
	case "text/html":
		return ".html"
	case "application/pdf":
		return ".pdf"
	}
	return ".bin"
}

// timeStep records a media step's duration and outcome.
func (m *Media) timeStep(step string, started time.Time, err *error) {
	outcome := "ok"
	if *err != nil {
		outcome = "failed"
	}
	m.Metrics.MediaStep(step, outcome, time.Since(started))
}
