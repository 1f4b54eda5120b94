package deepgram_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/deepgram"
)

const secret = "dg-secret-key"

// listen is an answer of POST /v1/listen from Deepgram's API reference
// (shortened), with utterances and speakers.
const listen = `{"metadata":{"transaction_key":"deprecated","request_id":"a847f427-4ad5-4d67-9b95-db801e58251c",
"sha256":"154e291ecfa8be6ab8343560bcc109008fa7853eb5372533e8efdefc9b504c33","created":"2024-05-12T18:57:13.426Z",
"duration":25.933313,"channels":1,"models":["30089e05-99d1-4376-b32e-c263170674af"]},
"results":{"channels":[{"detected_language":"en","language_confidence":0.99,"alternatives":[{
"transcript":"Yeah. As much as it's worth celebrating the first spacewalk with an all female team, I think many of us are looking forward to it just being normal.",
"confidence":0.99902344,"words":[{"word":"yeah","start":0.08,"end":0.32,"confidence":0.9975586,"punctuated_word":"Yeah.","speaker":0}]}]}],
"utterances":[{"start":0.08,"end":3.3,"confidence":0.97,"channel":0,"transcript":"Yeah. As much as it's worth celebrating","words":[],"speaker":0,"id":"u1"},
{"start":3.5,"end":9.1,"confidence":0.95,"channel":0,"transcript":"the first spacewalk with an all female team, I think many of us are looking forward to it just being normal.","words":[],"speaker":1,"id":"u2"}]}}`

type fake struct {
	mu      sync.Mutex
	queries []url.Values
	bodies  []string
	types   []string
	fail    int
	failMsg string
}

func newAdapter(t *testing.T, f *fake) (*deepgram.Adapter, providers.Call) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		assert.Equal(t, "Token "+secret, r.Header.Get("Authorization"))
		assert.Equal(t, "POST /v1/listen", r.Method+" "+r.URL.Path)
		data, _ := io.ReadAll(r.Body)
		assert.Equal(t, int64(len(data)), r.ContentLength)
		f.queries, f.bodies, f.types = append(f.queries, r.URL.Query()), append(f.bodies, string(data)), append(f.types, r.Header.Get("Content-Type"))
		w.Header().Set("Content-Type", "application/json")
		if f.fail != 0 {
			w.Header().Set("Retry-After", "4")
			w.WriteHeader(f.fail)
			_, _ = io.WriteString(w, f.failMsg)
			return
		}
		_, _ = io.WriteString(w, listen)
	}))
	t.Cleanup(srv.Close)
	p := &providers.Provider{ID: "dg", Settings: map[string]any{"base_url": srv.URL, "api_key_env": "DG_KEY"},
		Services: map[jobs.ServiceID]*providers.Capability{jobs.Transcriptions: {
			Limits:  providers.Limits{MaxFileSizeMB: 1},
			Pricing: providers.Pricing{Unit: providers.PerMinute, Amount: 0.0043, Currency: "USD"}}}}
	a, err := deepgram.New(p, providers.WithLookupEnv(func(name string) (string, bool) { return secret, name == "DG_KEY" }))
	require.NoError(t, err)
	audio := filepath.Join(t.TempDir(), "audio.wav")
	require.NoError(t, os.WriteFile(audio, []byte("RIFF....WAVE"), 0o600))
	return a, providers.Call{Service: jobs.Transcriptions, Provider: p,
		Input: json.RawMessage(`{"type":"audio","url":"https://media.test/a.mp3"}`),
		Media: &providers.Media{Path: audio, ContentType: "audio/wav", Size: 12, Duration: 26}}
}

func run(t *testing.T, a *deepgram.Adapter, call providers.Call, options string) (jobs.TranscriptionResult, error) {
	t.Helper()
	call.Options = json.RawMessage(options)
	out, err := a.Run(context.Background(), call)
	var res jobs.TranscriptionResult
	if err == nil {
		require.NoError(t, json.Unmarshal(out, &res))
	}
	return res, err
}

func TestTranscribes(t *testing.T) {
	t.Parallel()
	f := &fake{}
	a, call := newAdapter(t, f)
	res, err := run(t, a, call, `{"include_usage":true,"format":"srt"}`)
	require.NoError(t, err)
	require.Equal(t, url.Values{"model": {"nova-3"}, "smart_format": {"true"}, "punctuate": {"true"}, "utterances": {"true"},
		"detect_language": {"true"}}, f.queries[0])
	require.Equal(t, "RIFF....WAVE", f.bodies[0], "the extracted audio is the body")
	require.Equal(t, "audio/wav", f.types[0])
	require.Equal(t, "srt", res.Format)
	require.Equal(t, "en", res.Language, "detected")
	require.InDelta(t, 25.933313, res.Duration, 1e-9)
	require.Contains(t, res.Text, "spacewalk")
	require.Len(t, res.Segments, 2)
	require.Equal(t, 0.08, res.Segments[0].Start)
	require.Equal(t, "Yeah. As much as it's worth celebrating", res.Segments[0].Text)
	require.Empty(t, res.Segments[0].Speaker, "no diarization asked")
	require.InDelta(t, 0.0043*25.933313/60, *res.Usage.Cost, 1e-9)

	res, err = run(t, a, call, `{"diarization":true,"language":"en-us","timestamps":false}`)
	require.NoError(t, err)
	require.Equal(t, "true", f.queries[1].Get("diarize"))
	require.Equal(t, "en-US", f.queries[1].Get("language"))
	require.False(t, f.queries[1].Has("detect_language"))
	require.Equal(t, "en-us", res.Language, "the job's language")
	require.Equal(t, []string{"speaker_1", "speaker_2"}, []string{res.Segments[0].Speaker, res.Segments[1].Speaker})

	res, err = run(t, a, call, `{"timestamps":false}`)
	require.NoError(t, err)
	require.Empty(t, res.Segments)
	require.NotEmpty(t, res.Text)
}

func TestFailuresAreClassified(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		body   string
		kind   providers.ErrorKind
		want   string
		after  time.Duration
	}{
		{401, `{"err_code":"INVALID_AUTH","err_msg":"Invalid credentials.","request_id":"r1"}`, providers.KindPermanent, "Invalid credentials. (INVALID_AUTH)", 0},
		{402, `{"err_code":"ASR_PAYMENT_REQUIRED","err_msg":"Project does not have enough credits for an ASR request","request_id":"r2"}`, providers.KindPermanent, "enough credits", 0},
		{400, `{"err_code":"Bad Request","err_msg":"Bad Request: failed to process audio: corrupt or unsupported data","request_id":"r3"}`, providers.KindPermanent, "corrupt or unsupported data", 0},
		{429, `{"err_code":"TOO_MANY_REQUESTS","err_msg":"Too many requests. Please try again later","request_id":"r4"}`, providers.KindRetryable, "Too many requests", 4 * time.Second},
		{502, ``, providers.KindRetryable, "answered 502", 4 * time.Second},
	} {
		a, call := newAdapter(t, &fake{fail: tc.status, failMsg: tc.body})
		_, err := run(t, a, call, `{}`)
		var perr *providers.Error
		require.True(t, errors.As(err, &perr), "%v", err)
		require.Equal(t, tc.kind, perr.Kind, "%v", err)
		require.Equal(t, tc.status, perr.StatusCode)
		require.Contains(t, perr.Error(), tc.want)
		require.NotContains(t, perr.Error(), secret)
		require.Equal(t, tc.after, perr.RetryAfter)
	}

	a, call := newAdapter(t, &fake{})
	call.Media.Size = 2 << 20
	_, err := run(t, a, call, `{}`)
	require.ErrorContains(t, err, "larger than the 1 MB")
	call.Media = nil
	_, err = run(t, a, call, `{}`)
	require.ErrorContains(t, err, "media stage")

	_, err = deepgram.New(&providers.Provider{ID: "x", Settings: map[string]any{"api_key_env": "MISSING"}}, providers.WithLookupEnv(func(string) (string, bool) { return "", false }))
	require.ErrorContains(t, err, "MISSING, but that environment variable is not set")
}
