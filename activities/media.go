package activities

import (
	"context"
	"encoding/json"
	"errors"
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

	"github.com/ai-job-gateway/gateway/internal/blobstore"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
)

// The media stage (docs/media.md): a job with media has it fetched once,
// into the blob store under work/<job>/, probed, and for transcriptions its
// audio track extracted, before it is routed. Each step is an activity of
// its own, so the job's history shows them, and any worker can run the
// next one: the files live in the blob store, not on the worker.

// CodeMediaProcessingUnavailable fails a job whose media this gateway
// cannot process: no blob store, or no ffmpeg on the worker.
const CodeMediaProcessingUnavailable = "MEDIA_PROCESSING_UNAVAILABLE"

// MediaInput names a job's media.
type MediaInput struct {
	JobID string `json:"job_id"`
	// Tenant owns the job; its fetches share the tenant's slots
	// (Activities.FetchSlots). Empty in jobs started before it was sent.
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

// FetchMedia streams the job's input.url into the blob store, once per
// job: through the address guard, capped at the largest max_file_size_mb
// among the providers that could take the job (routing then skips those
// whose own limit is smaller), never held whole in memory, within
// FetchLimits. It first waits for one of the tenant's FetchSlots,
// heartbeating; then it heartbeats while bytes arrive, so a stalled
// download times out and is tried again.
func (a *Activities) FetchMedia(ctx context.Context, in MediaInput) (_ MediaFile, err error) {
	defer a.timeStep("fetch", time.Now(), &err)
	if a.Files == nil {
		return MediaFile{}, unavailable("this gateway has no blob store for media (docs/media.md: --blob-url)")
	}
	url := jobs.MediaURL(in.Input)
	if url == "" {
		return MediaFile{}, classify(providers.InputError(media.UnreadableCode(in.Service), "input.url is missing", nil))
	}
	scratch, err := a.scratch(in.JobID)
	if err != nil {
		return MediaFile{}, err
	}
	defer os.RemoveAll(scratch)

	stopWaiting := a.heartbeat(ctx, new(atomic.Int64))
	release, err := a.FetchSlots.Acquire(ctx, in.Tenant)
	stopWaiting()
	if err != nil {
		return MediaFile{}, err
	}

	var received atomic.Int64
	stop := a.heartbeatWhile(ctx, &received)
	defer stop()
	client := countingClient(a.mediaClient(), &received)
	limits := a.FetchLimits
	limits.MaxBytes = policy.MediaCapBytes(a.Providers.Catalog().Providers, in.Service, in.Explicit)
	local := filepath.Join(scratch, "source")
	fetched, err := media.Fetch(ctx, client, in.Service, url, local, limits)
	release() // the upload below is not a fetch
	if err != nil {
		return MediaFile{}, classifyMedia(err)
	}
	file := MediaFile{Key: WorkPrefix(in.JobID) + "source", ContentType: fetched.ContentType, Size: fetched.Size}
	// The upload counts too: a long one keeps heartbeating, a stalled one
	// times out.
	if err := a.putFile(ctx, file.Key, file.ContentType, local, &received); err != nil {
		return MediaFile{}, err
	}
	return file, nil
}

// ProbeMedia runs ffprobe on the fetched media. Media ffprobe cannot read,
// or with neither audio nor video, fails the job (AUDIO_UNREADABLE for
// transcriptions, INPUT_UNREADABLE otherwise).
func (a *Activities) ProbeMedia(ctx context.Context, in ProbeInput) (_ media.Probe, err error) {
	defer a.timeStep("probe", time.Now(), &err)
	tools, err := a.mediaTools()
	if err != nil {
		return media.Probe{}, err
	}
	stop := a.heartbeat(ctx, new(atomic.Int64))
	defer stop()
	source, done, err := a.localCopy(ctx, in.JobID, in.Source)
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
func (a *Activities) ExtractAudio(ctx context.Context, in ExtractInput) (_ MediaFile, err error) {
	defer a.timeStep("extract", time.Now(), &err)
	tools, err := a.mediaTools()
	if err != nil {
		return MediaFile{}, err
	}
	stop := a.heartbeat(ctx, new(atomic.Int64))
	defer stop()
	source, done, err := a.localCopy(ctx, in.JobID, in.Source)
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
	if err := a.putFile(ctx, file.Key, file.ContentType, local, nil); err != nil {
		return MediaFile{}, err
	}
	return file, nil
}

// classifyMedia turns a failure of the media into the job's error, as a
// provider's failure is turned (classify).
func classifyMedia(err error) error { return classify(providers.MediaError(err)) }

// RemoveJobMedia deletes the job's media stage files once it has ended.
func (a *Activities) RemoveJobMedia(ctx context.Context, jobID string) error {
	if a.Files == nil {
		return nil
	}
	_, err := a.Files.DeletePrefix(ctx, WorkPrefix(jobID))
	return err
}

// Media sweep periods (docs/media.md, Where files live).
const (
	// WorkFilesMaxAge is how long media stage files may outlive a crash
	// before the sweep removes them; no job takes that long to route.
	WorkFilesMaxAge = 24 * time.Hour
	// scratchMaxAge is how long a worker's local scratch directory may
	// stay; no media step runs that long.
	scratchMaxAge = 6 * time.Hour
)

// SweepWorkFiles removes the blob store's media stage files older than
// WorkFilesMaxAge, which crashed media steps left behind, and returns how
// many it removed. The blob store is shared: one worker of the deployment
// runs it each round (docs/operations.md, Housekeeping).
func (a *Activities) SweepWorkFiles(ctx context.Context, now time.Time) (int, error) {
	if a.Files == nil {
		return 0, nil
	}
	return a.Files.Sweep(ctx, "work/", now.Add(-WorkFilesMaxAge))
}

// SweepResultFiles removes the result files older than retention (0: none)
// and returns how many it removed; like SweepWorkFiles, once per round.
func (a *Activities) SweepResultFiles(ctx context.Context, now time.Time, retention time.Duration) (int, error) {
	if a.Files == nil || retention <= 0 {
		return 0, nil
	}
	return a.Files.Sweep(ctx, "results/", now.Add(-retention))
}

// SweepScratch removes this worker's local scratch directories older than
// scratchMaxAge, which crashed media steps left behind, and returns how
// many it removed. Every worker runs it: the directory is its own.
func (a *Activities) SweepScratch(_ context.Context, now time.Time) (int, error) {
	if a.ScratchDir == "" {
		return 0, nil
	}
	entries, err := os.ReadDir(a.ScratchDir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var errs []error
	removed := 0
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(now.Add(-scratchMaxAge)) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(a.ScratchDir, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// scratch makes a fresh local directory for one media step of a job.
func (a *Activities) scratch(jobID string) (string, error) {
	dir := a.ScratchDir
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return os.MkdirTemp(dir, jobID+"-")
}

// localCopy downloads a media stage file into a scratch directory; done
// removes it.
func (a *Activities) localCopy(ctx context.Context, jobID string, file MediaFile) (string, func(), error) {
	if a.Files == nil {
		return "", nil, unavailable("this gateway has no blob store for media (docs/media.md: --blob-url)")
	}
	scratch, err := a.scratch(jobID)
	if err != nil {
		return "", nil, err
	}
	done := func() { _ = os.RemoveAll(scratch) }
	local := filepath.Join(scratch, path.Base(file.Key))
	if _, err := a.Files.Download(ctx, file.Key, local); err != nil {
		done()
		if errors.Is(err, blobstore.ErrNotFound) {
			// Swept or never written: the workflow fetches again.
			return "", nil, temporal.NewNonRetryableApplicationError("media file "+file.Key+" is gone", ErrTypeMediaGone, err)
		}
		return "", nil, err
	}
	return local, done, nil
}

// ErrTypeMediaGone: a media stage file the step needs is no longer in the
// blob store.
const ErrTypeMediaGone = "MediaGone"

// putFile uploads a local file to the blob store, counting the bytes read
// into sent when it is not nil.
func (a *Activities) putFile(ctx context.Context, key, contentType, local string, sent *atomic.Int64) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	var body io.Reader = f
	if sent != nil {
		body = &countingBody{ReadCloser: f, n: sent}
	}
	_, err = a.Files.Put(ctx, key, contentType, body)
	return err
}

func (a *Activities) mediaTools() (media.Tools, error) {
	if a.MediaTools == nil {
		return media.Tools{}, unavailable(fmt.Sprintf("worker %s cannot process media: ffmpeg and ffprobe are not installed (apt-get install ffmpeg, or make engines)", a.WorkerID))
	}
	return *a.MediaTools, nil
}

func (a *Activities) mediaClient() *http.Client {
	if a.MediaClient != nil {
		return a.MediaClient
	}
	return http.DefaultClient
}

// unavailable is the job failure of a gateway that cannot process media.
func unavailable(msg string) error {
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeInvalidInput, nil,
		jobs.Error{Code: CodeMediaProcessingUnavailable, Message: msg})
}

// heartbeatWhile heartbeats while *received grows: a download that stalls
// stops heartbeating, so Temporal times the attempt out and tries again.
func (a *Activities) heartbeatWhile(ctx context.Context, received *atomic.Int64) (stop func()) {
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
func (a *Activities) timeStep(step string, started time.Time, err *error) {
	outcome := "ok"
	if *err != nil {
		outcome = "failed"
	}
	a.Metrics.MediaStep(step, outcome, time.Since(started))
}
