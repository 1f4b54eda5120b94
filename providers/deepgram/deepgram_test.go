package deepgram_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/deepgram"
	"github.com/ai-job-gateway/gateway/providers/providertest"
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
"utterances":[{"start":0.08,"end":3.3,"confidence":0.97,"channel":0,"transcript":"Yeah. As much as it's worth celebrating","words":[
{"word":"yeah","start":0.08,"end":0.32,"confidence":0.9975586,"punctuated_word":"Yeah.","speaker":0,"speaker_confidence":0.9},
{"word":"as","start":0.32,"end":0.8,"confidence":0.9921875,"punctuated_word":"As","speaker":0,"speaker_confidence":0.9},
{"word":"much","start":0.8,"end":1.04,"confidence":0.9995117,"punctuated_word":"much","speaker":0,"speaker_confidence":0.9},
{"word":"as","start":1.04,"end":1.2,"confidence":0.9980469,"punctuated_word":"as","speaker":0,"speaker_confidence":0.9},
{"word":"it's","start":1.2,"end":1.36,"confidence":0.9975586,"punctuated_word":"it's","speaker":0,"speaker_confidence":0.9},
{"word":"worth","start":1.36,"end":1.6,"confidence":0.9995117,"punctuated_word":"worth","speaker":0,"speaker_confidence":0.9},
{"word":"celebrating","start":1.6,"end":3.3,"confidence":0.96,"speaker":0,"speaker_confidence":0.9}],"speaker":0,"id":"u1"},
{"start":3.5,"end":9.1,"confidence":0.95,"channel":0,"transcript":"the first spacewalk with an all female team, I think many of us are looking forward to it just being normal.","words":[],"speaker":1,"id":"u2"}]}}`

// fake records what the adapter sends to a fake Deepgram.
type fake struct {
	queries []url.Values
	bodies  []string
	types   []string
}

// serve makes v a fake Deepgram: every request must be POST /v1/listen
// with the key and the audio, and f records it.
func (f *fake) serve(t *testing.T, v *providertest.Vendor) *providertest.Vendor {
	return v.RequireAuth("Authorization", "Token "+secret).Check(func(r *http.Request) {
		assert.Equal(t, "POST /v1/listen", r.Method+" "+r.URL.Path)
		data, _ := io.ReadAll(r.Body)
		assert.Equal(t, int64(len(data)), r.ContentLength)
		f.queries, f.bodies, f.types = append(f.queries, r.URL.Query()), append(f.bodies, string(data)), append(f.types, r.Header.Get("Content-Type"))
	})
}

// newAdapter is an adapter of a fake Deepgram that answers listen, and a
// call with extracted audio.
func newAdapter(t *testing.T, f *fake) (*deepgram.Adapter, providers.Call) {
	t.Helper()
	v := providertest.NewVendor(t, func(w http.ResponseWriter, _ *http.Request) { providertest.WriteJSON(w, listen) })
	return adapterOf(t, f.serve(t, v))
}

func adapterOf(t *testing.T, v *providertest.Vendor) (*deepgram.Adapter, providers.Call) {
	t.Helper()
	p := providertest.Provider("dg", map[string]any{"base_url": v.URL, "api_key_env": "DG_KEY"}, jobs.Transcriptions, providers.Capability{
		Limits:  providers.Limits{MaxFileSizeMB: 1},
		Pricing: providers.Pricing{Unit: providers.PerMinute, Amount: 0.0043, Currency: "USD"}})
	a, err := deepgram.New(p, providertest.Env("DG_KEY", secret))
	require.NoError(t, err)
	call := providertest.Call(p, jobs.Transcriptions, `{"type":"audio","url":"https://media.test/a.mp3"}`, "")
	call.Media = providertest.AudioMedia(t, 26)
	return a, call
}

func run(t *testing.T, a *deepgram.Adapter, call providers.Call, options string) (jobs.TranscriptionResult, error) {
	t.Helper()
	call.Options = json.RawMessage(options)
	res, _, err := providertest.Run[jobs.TranscriptionResult](context.Background(), t, a, call)
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
	require.Len(t, res.Segments[0].Words, 7)
	first, last := res.Segments[0].Words[0], res.Segments[0].Words[6]
	require.Equal(t, jobs.Word{Start: 0.08, End: 0.32, Text: "Yeah.", Confidence: first.Confidence}, first, "smart_format's punctuated word")
	require.InDelta(t, 0.9975586, *first.Confidence, 1e-9)
	require.Equal(t, "celebrating", last.Text, "the word, where no punctuated word is given")
	require.Equal(t, 3.3, last.End)
	require.Empty(t, res.Segments[1].Words, "an utterance without words")
	require.InDelta(t, 0.0043*25.933313/60, *res.Usage.Cost, 1e-9)

	res, err = run(t, a, call, `{"diarization":true,"language":"en-us","timestamps":false}`)
	require.NoError(t, err)
	require.Equal(t, "true", f.queries[1].Get("diarize"))
	require.Equal(t, "en-US", f.queries[1].Get("language"))
	require.False(t, f.queries[1].Has("detect_language"))
	require.Equal(t, "en-us", res.Language, "the job's language")
	require.Equal(t, []string{"speaker_1", "speaker_2"}, []string{res.Segments[0].Speaker, res.Segments[1].Speaker})
	require.Empty(t, res.Segments[0].Words, "words only with timestamps")

	res, err = run(t, a, call, `{"timestamps":false}`)
	require.NoError(t, err)
	require.Empty(t, res.Segments)
	require.NotEmpty(t, res.Text)
}

func TestFailuresAreClassified(t *testing.T) {
	t.Parallel()
	retry := []string{"Retry-After", "4"}
	providertest.RunStatusCases(t, secret, []providertest.StatusCase{
		{Name: "bad key", Status: 401, Body: `{"err_code":"INVALID_AUTH","err_msg":"Invalid credentials.","request_id":"r1"}`, Header: retry,
			Kind: providers.KindPermanent, Says: "Invalid credentials. (INVALID_AUTH)"},
		{Name: "no credits", Status: 402, Body: `{"err_code":"ASR_PAYMENT_REQUIRED","err_msg":"Project does not have enough credits for an ASR request","request_id":"r2"}`, Header: retry,
			Kind: providers.KindPermanent, Says: "enough credits"},
		{Name: "bad audio", Status: 400, Body: `{"err_code":"Bad Request","err_msg":"Bad Request: failed to process audio: corrupt or unsupported data","request_id":"r3"}`, Header: retry,
			Kind: providers.KindPermanent, Says: "corrupt or unsupported data"},
		{Name: "rate limited", Status: 429, Body: `{"err_code":"TOO_MANY_REQUESTS","err_msg":"Too many requests. Please try again later","request_id":"r4"}`, Header: retry,
			Kind: providers.KindRetryable, Says: "Too many requests", RetryAfter: 4 * time.Second},
		{Name: "bad gateway", Status: 502, Body: ``, Header: retry, Kind: providers.KindRetryable, Says: "answered 502", RetryAfter: 4 * time.Second},
	}, func(t *testing.T, v *providertest.Vendor) []error {
		a, call := adapterOf(t, (&fake{}).serve(t, v))
		_, err := run(t, a, call, `{}`)
		return []error{err}
	})
}

func TestCallsAreChecked(t *testing.T) {
	t.Parallel()
	a, call := newAdapter(t, &fake{})
	call.Media.Size = 2 << 20
	_, err := run(t, a, call, `{}`)
	require.ErrorContains(t, err, "larger than the 1 MB")
	call.Media = nil
	_, err = run(t, a, call, `{}`)
	require.ErrorContains(t, err, "media stage")

	_, err = deepgram.New(&providers.Provider{ID: "x", Settings: map[string]any{"api_key_env": "MISSING"}}, providertest.NoEnv())
	require.ErrorContains(t, err, "MISSING, but that environment variable is not set")
}
