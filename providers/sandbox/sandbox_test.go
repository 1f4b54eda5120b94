package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// bundle is what setup gives each test.
type bundle struct {
	adapter  *Adapter
	provider *providers.Provider
	media    *httptest.Server
	// mediaURL answers HEAD with a Content-Length of mediaSize.
	mediaURL string
	mu       sync.Mutex
	waits    []time.Duration
	reports  []int
}

const mediaSize = 1_600_000 // 100 s of audio at 128 kbit/s, 3.2 s of video

// setup builds a sandbox adapter whose waits are recorded, not slept, and a
// media server: /status/N answers N, anything else 200 with mediaSize bytes.
func setup(t *testing.T, settings map[string]any) *bundle {
	t.Helper()
	b := &bundle{}
	b.media = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodHead {
			t.Errorf("sandbox sent %s, want HEAD", r.Method)
		}
		if code, ok := statusPath(r.URL.Path); ok {
			w.WriteHeader(code)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(mediaSize))
	}))
	t.Cleanup(b.media.Close)
	b.mediaURL = b.media.URL + "/media/file.mp4"

	pricing := func(unit string, amount float64) *providers.Capability {
		return &providers.Capability{Pricing: providers.Pricing{Unit: unit, Amount: amount, Currency: "USD"}, Models: nil}
	}
	b.provider = &providers.Provider{
		ID: "sb", Name: "Sandbox test", Adapter: "sandbox", Settings: settings,
		Services: map[jobs.ServiceID]*providers.Capability{
			jobs.Transcriptions: pricing(providers.PerMinute, 0.006),
			jobs.Translations:   pricing(providers.PerCharacter, 0.00002),
			jobs.VideoAnalyses:  pricing(providers.PerMinute, 0.1),
			jobs.LLMTasks:       {Models: []string{"sandbox-model", "other-model"}, Pricing: providers.Pricing{Unit: providers.PerToken, Amount: 0.000002, Currency: "USD"}},
		},
	}
	a, err := New(b.provider, providers.WithMediaClient(b.media.Client()))
	require.NoError(t, err)
	a.wait = func(ctx context.Context, d time.Duration) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.waits = append(b.waits, d)
		return ctx.Err()
	}
	b.adapter = a
	return b
}

func statusPath(p string) (int, bool) {
	if len(p) > len("/status/") && p[:len("/status/")] == "/status/" {
		n, err := strconv.Atoi(p[len("/status/"):])
		return n, err == nil
	}
	return 0, false
}

// run calls the adapter for svc with the given input and options.
func (b *bundle) run(t *testing.T, svc jobs.ServiceID, input, options string, resume int) (map[string]any, error) {
	t.Helper()
	out, err := b.adapter.Run(context.Background(), providers.Call{
		JobID: "job-1", Service: svc, Provider: b.provider,
		Input: json.RawMessage(input), Options: json.RawMessage(options), ResumeFrom: resume,
		Report: func(p int) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.reports = append(b.reports, p)
		},
	})
	if err != nil {
		return nil, err
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(out, &m))
	return m, nil
}

func (b *bundle) totalWait() time.Duration {
	var d time.Duration
	for _, w := range b.waits {
		d += w
	}
	return d
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestTranscription(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		options string
		check   func(t *testing.T, res map[string]any)
	}{
		{"defaults", ``, func(t *testing.T, res map[string]any) {
			require.Equal(t, []string{"duration", "format", "language", "segments", "text"}, keys(res))
			require.Equal(t, "json", res["format"])
			require.Equal(t, "en", res["language"])
			require.InDelta(t, 100.0, res["duration"], 0.01, "duration follows Content-Length")
			segs := res["segments"].([]any)
			require.NotEmpty(t, segs)
			first := segs[0].(map[string]any)
			require.Contains(t, first["text"], "[sandbox]")
			require.NotContains(t, first, "speaker")
			end := 0.0
			for _, s := range segs {
				seg := s.(map[string]any)
				require.InDelta(t, end, seg["start"], 1e-9, "segments are contiguous")
				require.Greater(t, seg["end"], seg["start"])
				require.NotEmpty(t, seg["text"])
				c := seg["confidence"].(float64)
				require.True(t, c >= 0 && c <= 1)
				end = seg["end"].(float64)
			}
			require.InDelta(t, 100.0, end, 0.01)
		}},
		{"no timestamps", `{"timestamps": false}`, func(t *testing.T, res map[string]any) {
			require.NotContains(t, res, "segments")
			require.NotContains(t, res, "usage")
			require.Contains(t, res["text"], "[sandbox]", "the transcript text is there without timestamps")
		}},
		{"diarization, srt, language", `{"diarization": true, "format": "srt", "language": "de"}`, func(t *testing.T, res map[string]any) {
			require.Equal(t, "srt", res["format"])
			require.Equal(t, "de", res["language"])
			speakers := map[any]bool{}
			for _, s := range res["segments"].([]any) {
				sp := s.(map[string]any)["speaker"]
				require.Regexp(t, `^speaker_\d$`, sp)
				speakers[sp] = true
			}
			require.Greater(t, len(speakers), 1)
		}},
		{"translated into English", `{"translate_to_english": true, "language": "de", "format": "vtt"}`, func(t *testing.T, res map[string]any) {
			require.Equal(t, "en", res["language"], "the transcript's language, not the spoken one")
			require.Equal(t, "vtt", res["format"])
			require.Contains(t, res["segments"].([]any)[0].(map[string]any)["text"], "translated into English")
			require.True(t, strings.HasPrefix(res["text"].(string), "[sandbox] This transcript is simulated, translated into English."))
		}},
		{"usage", `{"include_usage": true}`, func(t *testing.T, res map[string]any) {
			u := res["usage"].(map[string]any)
			require.NotContains(t, u, "input_tokens")
			require.Greater(t, u["output_tokens"], 0.0)
			require.InDelta(t, 100.0/60*0.006, u["cost"], 1e-9, "per_minute pricing times duration")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			res, err := b.run(t, jobs.Transcriptions, `{"type":"audio","url":"`+b.mediaURL+`"}`, tt.options, 0)
			require.NoError(t, err)
			tt.check(t, res)
		})
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)

	in := `{"type":"audio","url":"` + b.mediaURL + `"}`
	r1, err := b.run(t, jobs.Transcriptions, in, `{}`, 0)
	require.NoError(t, err)
	r2, err := b.run(t, jobs.Transcriptions, ` { "url" : "`+b.mediaURL+`", "type":"audio" } `, `null`, 0)
	require.NoError(t, err)
	require.Equal(t, r1, r2, "same input, same result")

	r3, err := b.run(t, jobs.Transcriptions, `{"type":"audio","url":"`+b.mediaURL+`?v=2"}`, `{}`, 0)
	require.NoError(t, err)
	require.NotEqual(t, r1["segments"], r3["segments"], "another input, another transcript")

	// Diarization adds speakers without changing the words.
	r4, err := b.run(t, jobs.Transcriptions, in, `{"diarization": true}`, 0)
	require.NoError(t, err)
	for i, s := range r4["segments"].([]any) {
		seg := s.(map[string]any)
		delete(seg, "speaker")
		require.Equal(t, r1["segments"].([]any)[i], seg)
	}
}

func TestTranslation(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, input, options string
		check                func(t *testing.T, b *bundle, res map[string]any)
	}{
		{"text, source absent", `{"type":"text","content":"héllo wörld","target_language":"de"}`, ``, func(t *testing.T, _ *bundle, res map[string]any) {
			require.Equal(t, []string{"character_count", "content", "source_language", "target_language"}, keys(res))
			require.Equal(t, "en", res["source_language"])
			require.Equal(t, "de", res["target_language"])
			require.Equal(t, "[sandbox en→de] héllo wörld", res["content"])
			require.Equal(t, 11.0, res["character_count"], "rune count of the source")
		}},
		{"text, auto, formal, usage", `{"type":"text","content":"hello","target_language":"fr"}`, `{"source_language":"auto","formality":"formal","include_usage":true}`, func(t *testing.T, _ *bundle, res map[string]any) {
			require.Equal(t, "en", res["source_language"])
			require.Equal(t, "[sandbox en→fr, formal] hello", res["content"])
			u := res["usage"].(map[string]any)
			require.Equal(t, 2.0, u["input_tokens"])
			require.InDelta(t, 5*0.00002, u["cost"], 1e-12, "per_character pricing")
		}},
		{"text, source given", `{"type":"text","content":"hola","target_language":"en"}`, `{"source_language":"es"}`, func(t *testing.T, _ *bundle, res map[string]any) {
			require.Equal(t, "es", res["source_language"])
		}},
		{"document", `{"type":"document","url":"MEDIA","target_language":"de"}`, ``, func(t *testing.T, _ *bundle, res map[string]any) {
			require.Equal(t, []string{"character_count", "source_language", "target_language"}, keys(res), "no content and no made-up download_url")
			require.Equal(t, float64(mediaSize), res["character_count"])
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			res, err := b.run(t, jobs.Translations, replaceMedia(tt.input, b.mediaURL), tt.options, 0)
			require.NoError(t, err)
			tt.check(t, b, res)
		})
	}
}

func replaceMedia(s, url string) string {
	return strings.ReplaceAll(s, `"MEDIA"`, strconv.Quote(url))
}

func TestVideoAnalysisFeatureSubset(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)

	res, err := b.run(t, jobs.VideoAnalyses, `{"url":"`+b.mediaURL+`","features":["labels","sentiment"]}`, ``, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"labels", "sentiment", "video_metadata"}, keys(res))
	meta := res["video_metadata"].(map[string]any)
	require.InDelta(t, 3.2, meta["duration"], 0.01)
	require.Equal(t, "mp4", meta["format"])
}

func TestVideoAnalysisAllFeatures(t *testing.T) {
	t.Parallel()

	for _, threshold := range []float64{0, 0.5, 0.8, 0.97, 1} {
		t.Run(strconv.FormatFloat(threshold, 'g', -1, 64), func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			in, err := json.Marshal(jobs.VideoAnalysisInput{URL: b.mediaURL + "?t=" + strconv.FormatFloat(threshold, 'g', -1, 64), Features: jobs.VideoAnalysisFeatures})
			require.NoError(t, err)
			res, err := b.run(t, jobs.VideoAnalyses, string(in), `{"confidence_threshold":`+strconv.FormatFloat(threshold, 'g', -1, 64)+`,"include_usage":true}`, 0)
			require.NoError(t, err)

			want := append(slices.Clone(jobs.VideoAnalysisFeatures), "video_metadata", "usage")
			slices.Sort(want)
			require.Equal(t, want, keys(res), "every requested section is present")

			checkConfidences(t, res, threshold)
			mod := res["content_moderation"].(map[string]any)
			signals := mod["signals"].([]any)
			require.Equal(t, len(signals) == 0, mod["is_safe"])
			for _, s := range signals {
				require.Contains(t, jobs.ModerationLabels, s.(map[string]any)["label"])
			}
			sent := res["sentiment"].(map[string]any)
			score := sent["score"].(float64)
			require.True(t, score >= -1 && score <= 1)
			require.Equal(t, sentimentLabel(score), sent["overall"])
			for _, in := range sent["instances"].([]any) {
				inst := in.(map[string]any)
				require.Equal(t, sentimentLabel(inst["score"].(float64)), inst["label"])
			}
			scenes := res["scenes"].([]any)
			for i, s := range scenes {
				require.Equal(t, float64(i), s.(map[string]any)["index"])
			}
			require.Contains(t, res["summary"], "[sandbox]")
			require.InDelta(t, 3.2/60*0.1, res["usage"].(map[string]any)["cost"], 1e-9)
		})
	}
}

// checkConfidences walks v and requires every "confidence" to be within
// threshold..1.
func checkConfidences(t *testing.T, v any, threshold float64) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "confidence" {
				c := e.(float64)
				require.True(t, c >= threshold && c <= 1, "confidence %v below threshold %v", c, threshold)
			}
			checkConfidences(t, e, threshold)
		}
	case []any:
		for _, e := range x {
			checkConfidences(t, e, threshold)
		}
	}
}

func TestLLMTask(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, input, options string
		check                func(t *testing.T, res map[string]any)
	}{
		{"defaults", `{"type":"text","text":"some text","prompt":"Summarise"}`, ``, func(t *testing.T, res map[string]any) {
			require.Equal(t, []string{"content", "finish_reason", "usage"}, keys(res), "usage always: the gateway shows it only when asked for")
			require.Equal(t, "completed", res["finish_reason"])
			require.Regexp(t, `^\[sandbox\] .*using model sandbox-model.*"Summarise"`, res["content"])
		}},
		{"model and usage", `{"type":"text","text":"some text","prompt":"Summarise","system_prompt":"Be brief"}`, `{"model":"other-model","include_usage":true}`, func(t *testing.T, res map[string]any) {
			require.Contains(t, res["content"], "using model other-model")
			u := res["usage"].(map[string]any)
			in, out := u["input_tokens"].(float64), u["output_tokens"].(float64)
			require.Equal(t, 3.0+2+3, in, "system prompt, prompt and text, four characters a token")
			require.Greater(t, out, 10.0)
			require.InDelta(t, (in+out)*0.000002, u["cost"], 1e-12)
		}},
		{"document", `{"type":"document","url":"MEDIA","prompt":"Summarise"}`, ``, func(t *testing.T, res map[string]any) {
			require.Contains(t, res["content"], strconv.Itoa(mediaSize)+" characters")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			res, err := b.run(t, jobs.LLMTasks, replaceMedia(tt.input, b.mediaURL), tt.options, 0)
			require.NoError(t, err)
			tt.check(t, res)
		})
	}
}

func TestProgressAndResume(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		latencyMS int
		resume    int
		reports   []int
		wait      time.Duration
	}{
		{"full run", 1000, 0, []int{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, time.Second},
		{"resume at 50", 1000, 50, []int{50, 60, 70, 80, 90, 100}, 500 * time.Millisecond},
		{"resume at 55", 1000, 55, []int{55, 60, 70, 80, 90, 100}, 450 * time.Millisecond},
		{"resume at 100", 1000, 100, []int{100}, 0},
		{"no latency", 0, 0, []int{0, 100}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, map[string]any{"latency_ms": tt.latencyMS})
			_, err := b.run(t, jobs.LLMTasks, `{"type":"text","text":"x","prompt":"y"}`, ``, tt.resume)
			require.NoError(t, err)
			require.Equal(t, tt.reports, b.reports)
			require.Equal(t, tt.wait, b.totalWait())
		})
	}
}

func TestRealLatencyAndCancellation(t *testing.T) {
	t.Parallel()

	p := &providers.Provider{ID: "sb", Settings: map[string]any{"latency_ms": 100}}
	a, err := New(p)
	require.NoError(t, err)
	call := providers.Call{Service: jobs.LLMTasks, Provider: p, Input: json.RawMessage(`{"type":"text","prompt":"y"}`)}

	require.Equal(t, 100*time.Millisecond, a.ExpectedDuration())
	start := time.Now()
	_, err = a.Run(context.Background(), call)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)

	p.Settings = map[string]any{"latency_ms": 60_000}
	a, err = New(p)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = a.Run(ctx, call)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second)
}

func TestFailRate(t *testing.T) {
	t.Parallel()

	always := setup(t, map[string]any{"fail_rate": 1})
	never := setup(t, map[string]any{"fail_rate": 0})
	for range 50 {
		_, err := always.run(t, jobs.LLMTasks, `{"type":"text","text":"x","prompt":"y"}`, ``, 0)
		var pe *providers.Error
		require.ErrorAs(t, err, &pe)
		require.Equal(t, providers.KindRetryable, pe.Kind)
		require.Equal(t, jobs.CodeProviderUnavailable, pe.Code)

		_, err = never.run(t, jobs.LLMTasks, `{"type":"text","text":"x","prompt":"y"}`, ``, 0)
		require.NoError(t, err)
	}
}

func TestMediaHead(t *testing.T) {
	t.Parallel()

	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL + "/a.mp3"
	closed.Close()

	tests := []struct {
		name   string
		svc    jobs.ServiceID
		url    func(b *bundle) string
		kind   providers.ErrorKind
		code   string
		status int
	}{
		{"404 transcription", jobs.Transcriptions, func(b *bundle) string { return b.media.URL + "/status/404" }, providers.KindInput, jobs.CodeMediaUnavailable, 404},
		{"403 transcription", jobs.Transcriptions, func(b *bundle) string { return b.media.URL + "/status/403" }, providers.KindInput, jobs.CodeMediaUnavailable, 403},
		{"404 video", jobs.VideoAnalyses, func(b *bundle) string { return b.media.URL + "/status/404" }, providers.KindInput, jobs.CodeMediaUnavailable, 404},
		{"410 llm document", jobs.LLMTasks, func(b *bundle) string { return b.media.URL + "/status/410" }, providers.KindInput, jobs.CodeMediaUnavailable, 410},
		{"429 is retryable", jobs.Transcriptions, func(b *bundle) string { return b.media.URL + "/status/429" }, providers.KindRetryable, "MEDIA_UNAVAILABLE", 429},
		{"503 is retryable", jobs.Transcriptions, func(b *bundle) string { return b.media.URL + "/status/503" }, providers.KindRetryable, "MEDIA_UNAVAILABLE", 503},
		{"network error is retryable", jobs.Transcriptions, func(*bundle) string { return closedURL }, providers.KindRetryable, "MEDIA_UNAVAILABLE", 0},
		{"not http", jobs.Transcriptions, func(*bundle) string { return "ftp://example.com/a.mp3" }, providers.KindInput, jobs.CodeAudioUnreadable, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			u, _ := json.Marshal(tt.url(b))
			input := map[jobs.ServiceID]string{
				jobs.Transcriptions: `{"type":"audio","url":` + string(u) + `}`,
				jobs.VideoAnalyses:  `{"url":` + string(u) + `,"features":["labels"]}`,
				jobs.LLMTasks:       `{"type":"document","url":` + string(u) + `,"prompt":"p"}`,
			}[tt.svc]
			_, err := b.run(t, tt.svc, input, ``, 0)
			var pe *providers.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, tt.kind, pe.Kind, "error %v", err)
			require.Equal(t, tt.code, pe.Code)
			require.Equal(t, tt.status, pe.StatusCode)
			require.Empty(t, b.reports[1:], "no progress beyond the start after a failure")
		})
	}
}

func TestHeadNotAllowedIsTrusted(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	res, err := b.run(t, jobs.Transcriptions, `{"type":"audio","url":"`+b.media.URL+`/status/405"}`, ``, 0)
	require.NoError(t, err)
	require.Greater(t, res["duration"], 0.0)
}

func TestNewValidatesSettings(t *testing.T) {
	t.Parallel()

	tests := []struct {
		settings map[string]any
		want     string
	}{
		{map[string]any{"latency": 5}, `unknown key(s) "latency"; known keys: latency_ms, fail_rate`},
		{map[string]any{"fail_rate": 1.5}, "fail_rate 1.5 is out of range"},
		{map[string]any{"fail_rate": "often"}, "fail_rate must be a number"},
		{map[string]any{"latency_ms": -1}, "latency_ms -1 is negative"},
	}
	for _, tt := range tests {
		_, err := New(&providers.Provider{ID: "x", Settings: tt.settings})
		require.ErrorContains(t, err, tt.want)
	}
}

func TestBadInputIsInputError(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	_, err := b.run(t, jobs.LLMTasks, `{"type":1}`, ``, 0)
	var pe *providers.Error
	require.True(t, errors.As(err, &pe))
	require.Equal(t, providers.KindInput, pe.Kind)
}

func TestPreparedMediaIsNotFetchedAgain(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]any{"latency_ms": 0})
	b.media.Config.Handler = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("the sandbox reached the media host although the gateway prepared the media")
	})
	out, err := b.adapter.Run(context.Background(), providers.Call{
		JobID: "job-1", Service: jobs.Transcriptions, Provider: b.provider,
		Input: json.RawMessage(`{"type":"video","url":"` + b.mediaURL + `"}`),
		Media: &providers.Media{Path: "/nonexistent", ContentType: "audio/wav", Size: 64000, Duration: 7.318},
	})
	require.NoError(t, err)
	var result jobs.TranscriptionResult
	require.NoError(t, json.Unmarshal(out, &result))
	require.Equal(t, 7.32, result.Duration, "the probed duration, not one guessed from the size")
}

func TestDocumentTranslationWritesTheResultFile(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]any{"latency_ms": 0})
	dir := t.TempDir()
	for _, tc := range []struct {
		name, contentType, source, want string
		chars                           float64
	}{
		{"text is marked line by line", "text/plain; charset=utf-8", "Hallo Welt.\n\nDas Haus ist groß.", "[sandbox →en] Hallo Welt.\n\n[sandbox →en] Das Haus ist groß.", 31},
		{"other documents are kept as they are", "application/pdf", "%PDF-1.7 \x00\x01", "%PDF-1.7 \x00\x01", 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := filepath.Join(dir, tc.name+".src"), filepath.Join(dir, tc.name+".out")
			require.NoError(t, os.WriteFile(src, []byte(tc.source), 0o600))
			out, err := b.adapter.Run(context.Background(), providers.Call{
				JobID: "job-1", Service: jobs.Translations, Provider: b.provider,
				Input:      json.RawMessage(`{"type":"document","url":"` + b.mediaURL + `","target_language":"en"}`),
				Media:      &providers.Media{Path: src, ContentType: tc.contentType, Size: int64(len(tc.source))},
				ResultFile: dst,
			})
			require.NoError(t, err)
			written, err := os.ReadFile(dst)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(written))
			var result map[string]any
			require.NoError(t, json.Unmarshal(out, &result))
			require.Equal(t, tc.chars, result["character_count"])
			require.NotContains(t, result, "content", "a document's translation is the file")
		})
	}
}

// runStreamed runs an llm-task with a Stream function and returns the
// pieces it got.
func (b *bundle) runStreamed(ctx context.Context, t *testing.T, svc jobs.ServiceID, input string, resume int) (map[string]any, []string, error) {
	t.Helper()
	var pieces []string
	out, err := b.adapter.Run(ctx, providers.Call{
		JobID: "job-1", Service: svc, Provider: b.provider, Input: json.RawMessage(input), ResumeFrom: resume,
		Report: func(p int) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.reports = append(b.reports, p)
		},
		Stream: func(text string) { pieces = append(pieces, text) },
	})
	if err != nil {
		return nil, pieces, err
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(out, &m))
	return m, pieces, nil
}

func TestLLMTaskStreamsWordByWord(t *testing.T) {
	t.Parallel()
	const input = `{"type":"text","text":"some text","prompt":"Summarise"}`
	want, err := setup(t, map[string]any{"latency_ms": 1000}).run(t, jobs.LLMTasks, input, ``, 0)
	require.NoError(t, err)

	tests := []struct {
		name   string
		resume int
		wait   time.Duration
	}{
		{"full run", 0, time.Second},
		{"resumed at 55", 55, 450 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, map[string]any{"latency_ms": 1000})
			res, pieces, err := b.runStreamed(context.Background(), t, jobs.LLMTasks, input, tt.resume)
			require.NoError(t, err)
			require.Equal(t, want, res, "the same result as unstreamed")
			require.Greater(t, len(pieces), 10)
			require.Equal(t, want["content"], strings.Join(pieces, ""), "the pieces make the whole answer, a retry's too")
			require.Equal(t, "[sandbox] ", pieces[0])
			require.Len(t, b.waits, len(pieces), "a wait before each piece")
			require.Equal(t, tt.wait, b.totalWait(), "spread over what is left of latency_ms")
			require.True(t, slices.IsSorted(b.reports), "%v", b.reports)
			require.Equal(t, tt.resume, b.reports[0])
			require.Equal(t, 100, b.reports[len(b.reports)-1])
		})
	}
}

func TestStreamWithoutLatencyAndForOtherServices(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	res, pieces, err := b.runStreamed(context.Background(), t, jobs.LLMTasks, `{"type":"text","prompt":"Hi"}`, 0)
	require.NoError(t, err)
	require.Equal(t, res["content"], strings.Join(pieces, ""))
	require.Equal(t, time.Duration(0), b.totalWait())
	require.True(t, slices.IsSorted(b.reports), "%v", b.reports)
	require.Equal(t, 100, b.reports[len(b.reports)-1])

	_, pieces, err = b.runStreamed(context.Background(), t, jobs.Translations, `{"type":"text","content":"Hallo","target_language":"en"}`, 0)
	require.NoError(t, err)
	require.Empty(t, pieces, "only llm-tasks stream")
}

func TestStreamCancelled(t *testing.T) {
	t.Parallel()
	p := &providers.Provider{ID: "sb", Settings: map[string]any{"latency_ms": 60_000}}
	a, err := New(p)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pieces []string
	start := time.Now()
	_, err = a.Run(ctx, providers.Call{Service: jobs.LLMTasks, Provider: p, Input: json.RawMessage(`{"type":"text","prompt":"y"}`),
		Stream: func(text string) {
			pieces = append(pieces, text)
			cancel()
		}})
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, pieces, 1, "nothing more once ctx ended")
	require.Less(t, time.Since(start), 30*time.Second)
}
