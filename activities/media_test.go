package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/blobstore"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
	"github.com/ai-job-gateway/gateway/internal/netguard"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/sandbox"
)

// mediaCatalog has one sandbox provider per service that has media.
const mediaCatalog = `providers:
  - id: sandbox-media
    name: Sandbox (media)
    adapter: sandbox
    settings: {latency_ms: 0, fail_rate: 0}
    services:
      transcriptions:
        features: [language_detection, timestamps]
        limits: {max_file_size_mb: 1, max_duration_seconds: 600}
        pricing: {unit: per_minute, amount: 0.006, currency: USD}
      translations:
        features: [formality]
        limits: {max_file_size_mb: 1}
        pricing: {unit: per_character, amount: 0.00002, currency: USD}
      video-analyses:
        features: [labels]
        limits: {max_file_size_mb: 1}
        pricing: {unit: per_minute, amount: 0.1, currency: USD}
`

// mediaBench is the media stage on real tools: a directory blob store,
// ffmpeg, the sandbox, and a server of the test's media files.
type mediaBench struct {
	env   *testsuite.TestActivityEnvironment
	acts  *activities.Set
	files *blobstore.Store
	media *httptest.Server
	dir   string // files the media server serves
}

func newMediaBench(t testing.TB) *mediaBench {
	t.Helper()
	mediatest.RequireTools(t)
	tools, err := media.FindTools()
	require.NoError(t, err)
	registry := registryOf(t, mediaCatalog, map[string]providers.Factory{
		"sandbox": func(p *providers.Provider) (providers.Adapter, error) { return sandbox.New(p) },
	})
	files, err := blobstore.Open(t.Context(), blobstore.Config{Dir: t.TempDir(), SigningKey: []byte("0123456789abcdef0123456789abcdef"), BaseURL: "http://files.test"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = files.Close() })
	b := &mediaBench{files: files, dir: t.TempDir()}
	b.media = httptest.NewServer(http.FileServer(http.Dir(b.dir)))
	t.Cleanup(b.media.Close)
	b.acts = activities.New(activities.Deps{
		Store: &recordingStore{}, Providers: registry, WorkerID: "worker-m",
		Files: files, MediaTools: &tools, ScratchDir: t.TempDir(),
		MediaClient: netguard.NewMediaClient(true, 0),
	})
	var suite testsuite.WorkflowTestSuite
	b.env = suite.NewTestActivityEnvironment()
	b.acts.Register(b.env)
	return b
}

// serve puts the file at path on the media server and returns its URL.
func (b *mediaBench) serve(t *testing.T, path string) string {
	t.Helper()
	name := filepath.Base(path)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(b.dir, name), data, 0o600))
	return b.media.URL + "/" + name
}

func (b *mediaBench) fetch(t *testing.T, service jobs.ServiceID, input string) (activities.MediaFile, error) {
	t.Helper()
	v, err := b.env.ExecuteActivity(acts.Media.FetchMedia, activities.MediaInput{JobID: "job-m", Service: service, Input: json.RawMessage(input)})
	var out activities.MediaFile
	if err == nil {
		require.NoError(t, v.Get(&out))
	}
	return out, err
}

func (b *mediaBench) probe(t *testing.T, service jobs.ServiceID, source activities.MediaFile) (media.Probe, error) {
	t.Helper()
	v, err := b.env.ExecuteActivity(acts.Media.ProbeMedia, activities.ProbeInput{JobID: "job-m", Service: service, Source: source})
	var out media.Probe
	if err == nil {
		require.NoError(t, v.Get(&out))
	}
	return out, err
}

func (b *mediaBench) extract(t *testing.T, source activities.MediaFile, probe media.Probe, track int) (activities.MediaFile, error) {
	t.Helper()
	v, err := b.env.ExecuteActivity(acts.Media.ExtractAudio, activities.ExtractInput{JobID: "job-m", Source: source, Probe: probe, Track: track})
	var out activities.MediaFile
	if err == nil {
		require.NoError(t, v.Get(&out))
	}
	return out, err
}

func (b *mediaBench) call(t *testing.T, in activities.CallInput) activities.CallOutput {
	t.Helper()
	in.JobID, in.ProviderID = "job-m", "sandbox-media"
	v, err := b.env.ExecuteActivity(acts.Calls.CallProvider, in)
	require.NoError(t, err)
	var out activities.CallOutput
	require.NoError(t, v.Get(&out))
	return out
}

func (b *mediaBench) read(t *testing.T, key string) string {
	t.Helper()
	r, err := b.files.Open(t.Context(), key)
	require.NoError(t, err)
	defer r.Close()
	data, err := io.ReadAll(r)
	require.NoError(t, err)
	return string(data)
}

// jobError is the job error a failed activity carries.
func jobError(t *testing.T, err error) jobs.Error {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, activities.ErrTypeInvalidInput, appErr.Type(), "%v", err)
	var jobErr jobs.Error
	require.NoError(t, appErr.Details(&jobErr))
	return jobErr
}

// refusedForGood requires err to be a job error that is not tried again
// (why says why) and returns it.
func refusedForGood(t *testing.T, err error, why string) jobs.Error {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.True(t, appErr.NonRetryable(), why)
	return jobError(t, err)
}

func TestVideoTranscriptionThroughTheMediaStage(t *testing.T) {
	t.Parallel()
	b := newMediaBench(t)
	video := b.serve(t, mediatest.Video(t, t.TempDir(), 2, 2))
	input := `{"type":"video","url":"` + video + `","audio_track":1}`

	source, err := b.fetch(t, jobs.Transcriptions, input)
	require.NoError(t, err)
	require.Equal(t, "work/job-m/source", source.Key)
	require.Positive(t, source.Size)
	probe, err := b.probe(t, jobs.Transcriptions, source)
	require.NoError(t, err)
	require.Len(t, probe.AudioStreams(), 2)
	require.InDelta(t, 2, probe.Duration, 0.3)
	audio, err := b.extract(t, source, probe, 1)
	require.NoError(t, err)
	require.Equal(t, "audio/wav", audio.ContentType)
	require.True(t, strings.HasPrefix(b.read(t, audio.Key), "RIFF"), "a WAV file")

	out := b.call(t, activities.CallInput{Service: jobs.Transcriptions, Input: json.RawMessage(input),
		Options: json.RawMessage(`{"format":"srt","timestamps":true}`),
		Media:   &activities.PreparedMedia{File: audio, Duration: probe.Duration, SourceURL: video}})
	var result jobs.TranscriptionResult
	require.NoError(t, json.Unmarshal(out.Result, &result))
	require.InDelta(t, probe.Duration, result.Duration, 0.01, "the sandbox uses the probed duration")
	require.Equal(t, "results/job-m/transcript.srt", out.ResultFile)
	require.Contains(t, b.read(t, out.ResultFile), " --> ", "the stored file is the subtitles")

	_, err = b.extract(t, source, probe, 2)
	unreadable := jobError(t, err)
	require.Equal(t, jobs.CodeAudioUnreadable, unreadable.Code)
	require.Contains(t, unreadable.Message, "audio_track")

	_, err = b.env.ExecuteActivity(acts.Media.RemoveJobMedia, "job-m")
	require.NoError(t, err)
	_, err = b.files.Open(t.Context(), source.Key)
	require.ErrorIs(t, err, blobstore.ErrNotFound, "the work files are gone once the job ended")
	require.NotEmpty(t, b.read(t, out.ResultFile), "the result file stays")
}

func TestTextSentAsAudioIsUnreadable(t *testing.T) {
	t.Parallel()
	b := newMediaBench(t)
	text := b.serve(t, mediatest.Text(t, t.TempDir()))
	source, err := b.fetch(t, jobs.Transcriptions, `{"type":"audio","url":"`+text+`"}`)
	require.NoError(t, err)
	_, err = b.probe(t, jobs.Transcriptions, source)
	require.Equal(t, jobs.CodeAudioUnreadable, jobError(t, err).Code)
}

func TestVideoAnalysisOfAudioGoesOn(t *testing.T) {
	t.Parallel()
	b := newMediaBench(t)
	tone := b.serve(t, mediatest.Tone(t, t.TempDir(), 1))
	source, err := b.fetch(t, jobs.VideoAnalyses, `{"url":"`+tone+`","features":["labels"]}`)
	require.NoError(t, err)
	probe, err := b.probe(t, jobs.VideoAnalyses, source)
	require.NoError(t, err, "the provider decides what it can do with audio alone")
	_, hasVideo := probe.VideoMetadata()
	require.False(t, hasVideo)
}

func TestVideoMetadataComesFromTheProbe(t *testing.T) {
	t.Parallel()
	b := newMediaBench(t)
	video := b.serve(t, mediatest.Video(t, t.TempDir(), 1, 1))
	input := `{"url":"` + video + `","features":["labels"]}`
	source, err := b.fetch(t, jobs.VideoAnalyses, input)
	require.NoError(t, err)
	probe, err := b.probe(t, jobs.VideoAnalyses, source)
	require.NoError(t, err)
	meta, ok := probe.VideoMetadata()
	require.True(t, ok)
	out := b.call(t, activities.CallInput{Service: jobs.VideoAnalyses, Input: json.RawMessage(input),
		Media: &activities.PreparedMedia{File: source, Duration: probe.Duration, Video: meta}})
	var result jobs.VideoAnalysisResult
	require.NoError(t, json.Unmarshal(out.Result, &result))
	require.Equal(t, meta, result.VideoMetadata)
	require.Empty(t, out.ResultFile, "video analyses have no result file")
}

func TestDocumentTranslationReturnsAFile(t *testing.T) {
	t.Parallel()
	b := newMediaBench(t)
	doc := filepath.Join(t.TempDir(), "letter.txt")
	require.NoError(t, os.WriteFile(doc, []byte("Hallo Welt.\n\nDas Haus ist groß.\n"), 0o600))
	url := b.serve(t, doc)
	input := `{"type":"document","url":"` + url + `","target_language":"en"}`
	source, err := b.fetch(t, jobs.Translations, input)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(source.ContentType, "text/plain"), source.ContentType)
	out := b.call(t, activities.CallInput{Service: jobs.Translations, Input: json.RawMessage(input),
		Media: &activities.PreparedMedia{File: source, SourceURL: url}})
	require.Equal(t, "results/job-m/translation.txt", out.ResultFile)
	require.Equal(t, "[sandbox →en] Hallo Welt.\n\n[sandbox →en] Das Haus ist groß.\n", b.read(t, out.ResultFile))
	var result jobs.TranslationResult
	require.NoError(t, json.Unmarshal(out.Result, &result))
	require.Equal(t, 32, result.CharacterCount, "characters of the source document")
}

func TestFetchIsCappedAtTheLargestProviderLimit(t *testing.T) {
	t.Parallel()
	b := newMediaBench(t)
	big := filepath.Join(t.TempDir(), "big.wav")
	require.NoError(t, os.WriteFile(big, make([]byte, 1<<20+1), 0o600))
	_, err := b.fetch(t, jobs.Transcriptions, `{"type":"audio","url":"`+b.serve(t, big)+`"}`)
	require.Equal(t, jobs.CodeFileTooLarge, jobError(t, err).Code)
}

func TestMediaTheHostRefusesFailsAtOnce(t *testing.T) {
	t.Parallel()
	b := newMediaBench(t)
	_, err := b.fetch(t, jobs.Transcriptions, `{"type":"audio","url":"`+b.media.URL+`/missing.wav"}`)
	refused := refusedForGood(t, err, "another try gets the same answer")
	require.Equal(t, jobs.CodeMediaUnavailable, refused.Code)
	require.Contains(t, refused.Message, "answered 404 Not Found")
}

func TestRedirectToAFileURLFailsAtOnce(t *testing.T) {
	t.Parallel()
	b := newMediaBench(t)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	_, err := b.fetch(t, jobs.Transcriptions, `{"type":"audio","url":"`+srv.URL+`/a.wav"}`)
	refused := refusedForGood(t, err, "the next try would be redirected the same way")
	require.Equal(t, jobs.CodeMediaAddressForbidden, refused.Code)
	require.Equal(t, "media host "+strings.TrimPrefix(srv.URL, "http://")+" redirected to a file: URL; only http and https are fetched", refused.Message)
	require.EqualValues(t, 1, hits.Load())
}

func TestTricklingMediaFailsRetryably(t *testing.T) {
	t.Parallel()
	b := newMediaBench(t)
	b.acts.Media.FetchLimits = media.Limits{MinBytes: 1024, RateWindow: 200 * time.Millisecond, Timeout: 5 * time.Second}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for { // a byte every 10 ms, for as long as the fetch stays
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(srv.Close)
	start := time.Now()
	_, err := b.fetch(t, jobs.Transcriptions, `{"type":"audio","url":"`+srv.URL+`/a.wav"}`)
	require.Less(t, time.Since(start), time.Second, "cut off after about one window, not at the timeout")
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.False(t, appErr.NonRetryable(), "tried again: the host may be faster next time")
	var jobErr jobs.Error
	require.NoError(t, appErr.Details(&jobErr))
	require.Equal(t, jobs.CodeMediaUnavailable, jobErr.Code)
	require.Contains(t, jobErr.Message, "media host "+strings.TrimPrefix(srv.URL, "http://")+" sent ")
	require.Contains(t, jobErr.Message, "below the minimum rate of 1 KiB per 200ms")
}

func TestFetchesPerTenantAreCapped(t *testing.T) {
	t.Parallel()
	b := newMediaBench(t)
	b.acts.Media.FetchSlots = media.NewSlots(2)
	var (
		mu       sync.Mutex
		inFlight = map[string]int{}
		peak     = map[string]int{}
	)
	arrived := make(chan string, 8)
	gate := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant := strings.Split(r.URL.Path, "/")[1]
		mu.Lock()
		inFlight[tenant]++
		peak[tenant] = max(peak[tenant], inFlight[tenant])
		mu.Unlock()
		arrived <- tenant
		<-gate
		_, _ = io.WriteString(w, "media of "+tenant)
		mu.Lock()
		inFlight[tenant]--
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	var open sync.Once
	t.Cleanup(func() { open.Do(func() { close(gate) }) }) // before srv.Close, should the test fail

	fetches := []string{"acme", "acme", "acme", "globex"}
	errs := make(chan error, len(fetches))
	for i, tenant := range fetches {
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		b.acts.Register(env)
		go func() {
			_, err := env.ExecuteActivity(acts.Media.FetchMedia, activities.MediaInput{
				JobID: fmt.Sprintf("job-%s-%d", tenant, i), Tenant: tenant, Service: jobs.Transcriptions,
				Input: json.RawMessage(`{"type":"audio","url":"` + srv.URL + "/" + tenant + `/a.wav"}`),
			})
			errs <- err
		}()
	}
	got := map[string]int{}
	for range 3 {
		select {
		case tenant := <-arrived:
			got[tenant]++
		case <-time.After(10 * time.Second):
			t.Fatalf("only %v reached the media host", got)
		}
	}
	require.Equal(t, map[string]int{"acme": 2, "globex": 1}, got, "acme's third fetch waits; globex's is not held")
	select {
	case tenant := <-arrived:
		t.Fatalf("a fetch of %s beyond the cap reached the media host", tenant)
	case <-time.After(300 * time.Millisecond):
	}
	open.Do(func() { close(gate) })
	for range fetches {
		require.NoError(t, <-errs)
	}
	require.Equal(t, map[string]int{"acme": 2, "globex": 1}, peak)
}

func TestWaitingForAFetchSlotHeartbeats(t *testing.T) {
	t.Parallel()
	// The fetch waits 2.5 heartbeat timeouts for a slot, with one try:
	// only its heartbeats while it waits keep it from timing out.
	const heartbeatTimeout = time.Second
	b := newMediaBench(t)
	b.acts.Media.FetchSlots = media.NewSlots(1)
	release, err := b.acts.Media.FetchSlots.Acquire(t.Context(), "acme")
	require.NoError(t, err)
	time.AfterFunc(5*heartbeatTimeout/2, release)
	url := b.serve(t, mediatest.Text(t, t.TempDir()))
	env, fetchOnce := onceWorkflow[activities.MediaInput, activities.MediaFile](b.acts, acts.Media.FetchMedia, heartbeatTimeout)
	start := time.Now()
	env.ExecuteWorkflow(fetchOnce, activities.MediaInput{JobID: "job-w", Tenant: "acme", Service: jobs.Translations,
		Input: json.RawMessage(`{"type":"document","url":"` + url + `","target_language":"en"}`)})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError(), "the waiting fetch timed out: it did not heartbeat")
	// The slot is held 5/2 heartbeat timeouts; timers may fire a hair early.
	require.GreaterOrEqual(t, time.Since(start), 5*heartbeatTimeout/2-100*time.Millisecond, "it waited for the slot")
}

func TestSweepRemovesOldWorkFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	files, err := blobstore.Open(ctx, blobstore.Config{Dir: t.TempDir(), SigningKey: []byte("0123456789abcdef0123456789abcdef"), BaseURL: "http://files.test"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = files.Close() })
	acts := &activities.Sweeps{Files: activities.Blobs{Store: files, ScratchDir: t.TempDir()}}
	for _, key := range []string{"work/old/source", "work/old/audio.wav", "results/old/transcript.srt"} {
		_, err := files.Put(ctx, key, "text/plain", strings.NewReader("x"))
		require.NoError(t, err)
	}
	stale := filepath.Join(acts.Files.ScratchDir, "old-1")
	require.NoError(t, os.MkdirAll(stale, 0o700))
	exists := func(key string) bool {
		t.Helper()
		r, err := files.Open(ctx, key)
		if errors.Is(err, blobstore.ErrNotFound) {
			return false
		}
		require.NoError(t, err)
		_ = r.Close()
		return true
	}
	sweep := func(removed int, err error) int {
		t.Helper()
		require.NoError(t, err)
		return removed
	}

	now := time.Now()
	require.Zero(t, sweep(acts.SweepWorkFiles(ctx, now)))
	require.Zero(t, sweep(acts.SweepScratch(ctx, now)))
	require.True(t, exists("work/old/source"), "young files stay")
	require.DirExists(t, stale)

	later := now.Add(72 * time.Hour)
	require.Equal(t, 2, sweep(acts.SweepWorkFiles(ctx, later)), "work files older than a day are swept")
	require.False(t, exists("work/old/source"))
	require.True(t, exists("results/old/transcript.srt"), "result files go with their job's retention (Retention)")
	require.Equal(t, 1, sweep(acts.SweepScratch(ctx, later)))
	require.NoDirExists(t, stale)

	require.Zero(t, sweep(acts.SweepWorkFiles(ctx, later)), "nothing left")
}

func TestRoutingKnowsTheMedia(t *testing.T) {
	t.Parallel()
	b := newMediaBench(t)
	route := func(sizeMB, duration float64) activities.RouteOutput {
		t.Helper()
		v, err := b.env.ExecuteActivity(acts.Routing.DecideRoute, activities.RouteInput{
			JobID: "job-r", Service: jobs.Transcriptions, Tenant: "acme", Attempt: 1,
			Input:       json.RawMessage(`{"type":"audio","url":"https://media.test/a.wav"}`),
			MediaSizeMB: &sizeMB, MediaDuration: &duration,
		})
		require.NoError(t, err)
		var out activities.RouteOutput
		require.NoError(t, v.Get(&out))
		return out
	}
	fits := route(0.5, 599)
	require.Nil(t, fits.Error, "%+v", fits.Routing.ProviderEvaluations)
	require.Equal(t, "sandbox-media", fits.Routing.ProviderID)
	tooLong := route(0.5, 601)
	require.NotNil(t, tooLong.Error)
	require.Equal(t, "MEDIA_TOO_LONG", tooLong.Error.Code)
	require.Equal(t, "limit_duration", tooLong.Routing.ProviderEvaluations[0].Reason)
}
