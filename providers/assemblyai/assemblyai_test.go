package assemblyai_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/assemblyai"
	"github.com/ai-job-gateway/gateway/providers/providertest"
)

const (
	secret       = "aai-secret-key"
	transcriptID = "9ea68fd3-f953-42c1-9742-976c447fb463"
	uploadURL    = "https://cdn.assemblyai.com/upload/f7a5d1c9-2e4e-4b5e-8c1a-6b0d3f1e2a77"
)

// Answers taken from AssemblyAI's API reference (shortened).
const (
	completed = `{"id":"` + transcriptID + `","language_model":"assemblyai_default","acoustic_model":"assemblyai_default",
"language_code":"en_us","status":"completed","audio_url":"` + uploadURL + `",
"text":"Smoke from hundreds of wildfires in Canada is triggering air quality alerts throughout the US. Skylines from Maine to Maryland to Minnesota are gray and smoggy.",
"words":[{"text":"Smoke","start":250,"end":650,"confidence":0.97465,"speaker":null}],
"utterances":[{"confidence":0.9359,"end":6350,"speaker":"A","start":250,"text":"Smoke from hundreds of wildfires in Canada is triggering air quality alerts throughout the US.",
"words":[{"text":"Smoke","start":250,"end":650,"confidence":0.97465,"speaker":"A"},{"text":"from","start":730,"end":1022,"confidence":0.99999,"speaker":"A"}]},
{"confidence":0.9462,"end":11200,"speaker":"B","start":6500,"text":"Skylines from Maine to Maryland to Minnesota are gray and smoggy."}],
"confidence":0.9578,"audio_duration":281,"punctuate":true,"format_text":true,"speaker_labels":true,"error":null}`
	sentences = `{"sentences":[{"text":"Smoke from hundreds of wildfires in Canada is triggering air quality alerts throughout the US.","start":250,"end":6350,"confidence":0.72412,
"words":[{"text":"Smoke","start":250,"end":650,"confidence":0.97465,"speaker":null},{"text":"from","start":730,"end":1022,"confidence":0.99999,"speaker":null},
{"text":"US.","start":5990,"end":6350,"confidence":0.99,"speaker":null}],"speaker":null},
{"text":"Skylines from Maine to Maryland to Minnesota are gray and smoggy.","start":6500,"end":11200,"confidence":0.9,"words":[],"speaker":null}],
"id":"` + transcriptID + `","confidence":0.9579,"audio_duration":281}`
	failed = `{"id":"` + transcriptID + `","status":"error","error":"Transcoding failed. File does not appear to contain audio.","text":null}`
	// deleted is a transcript after DELETE /v2/transcript/{id}: the record
	// stays, its text and audio URL replaced.
	deleted = `{"id":"` + transcriptID + `","language_code":"en_us","status":"completed","audio_url":"http://deleted_by_user",
"text":"Deleted by user.","words":null,"utterances":null,"confidence":null,"audio_duration":281,"error":null}`
)

// fake speaks AssemblyAI's v2 protocol for one transcript.
type fake struct {
	uploads  []string
	requests []map[string]any // POST /v2/transcript bodies
	statuses []string         // what successive transcript reads answer
	reads    int
	deleted  bool // the transcript was deleted: reads answer its remains
}

func (f *fake) routes(t *testing.T) http.HandlerFunc {
	routes := f.transcriptRoutes(t)
	return func(w http.ResponseWriter, r *http.Request) {
		if id, ok := strings.CutPrefix(r.URL.Path, "/v2/transcript/"); ok && r.Method == http.MethodDelete {
			f.delete(w, id)
			return
		}
		routes(w, r)
	}
}

// delete answers DELETE /v2/transcript/{id}: the deleted transcript, or
// 404 for an id the fake does not know.
func (f *fake) delete(w http.ResponseWriter, id string) {
	if id != transcriptID {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"Transcript not found"}`)
		return
	}
	f.deleted = true
	providertest.WriteJSON(w, deleted)
}

func (f *fake) transcriptRoutes(t *testing.T) http.HandlerFunc {
	return providertest.Routes(t, map[string]http.HandlerFunc{
		"POST /v2/upload": func(w http.ResponseWriter, r *http.Request) {
			assert.Equal(t, "application/octet-stream", r.Header.Get("Content-Type"))
			data, _ := io.ReadAll(r.Body)
			assert.Equal(t, int64(len(data)), r.ContentLength)
			f.uploads = append(f.uploads, string(data))
			providertest.WriteJSON(w, `{"upload_url":"`+uploadURL+`"}`)
		},
		"POST /v2/transcript": func(w http.ResponseWriter, r *http.Request) {
			assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
			var body map[string]any
			assert.NoError(t, json.NewDecoder(r.Body).Decode(&body))
			f.requests = append(f.requests, body)
			providertest.WriteJSON(w, `{"id":"`+transcriptID+`","status":"queued","audio_url":"`+uploadURL+`"}`)
		},
		"GET /v2/transcript/" + transcriptID: func(w http.ResponseWriter, _ *http.Request) {
			status := f.statuses[min(f.reads, len(f.statuses)-1)]
			f.reads++
			if f.deleted {
				providertest.WriteJSON(w, deleted)
				return
			}
			switch status {
			case "completed":
				providertest.WriteJSON(w, completed)
			case "error":
				providertest.WriteJSON(w, failed)
			default:
				providertest.WriteJSON(w, `{"id":"`+transcriptID+`","status":"`+status+`"}`)
			}
		},
		"GET /v2/transcript/" + transcriptID + "/sentences": func(w http.ResponseWriter, _ *http.Request) {
			providertest.WriteJSON(w, sentences)
		},
	})
}

// newAdapter is an adapter of the fake f, and a call with extracted audio.
func newAdapter(t *testing.T, f *fake) (*assemblyai.Adapter, providers.Call) {
	t.Helper()
	return adapterOf(t, providertest.NewVendor(t, f.routes(t)))
}

func adapterOf(t *testing.T, v *providertest.Vendor) (*assemblyai.Adapter, providers.Call) {
	t.Helper()
	v.RequireAuth("Authorization", secret) // the key goes bare in the authorization header
	p := providertest.Provider("aai", map[string]any{"base_url": v.URL, "api_key_env": "AAI_KEY", "speech_model": "universal"},
		jobs.Transcriptions, providers.Capability{
			Limits:  providers.Limits{MaxFileSizeMB: 1},
			Pricing: providers.Pricing{Unit: providers.PerMinute, Amount: 0.0065, Currency: "USD"}})
	a, err := assemblyai.New(p, providertest.Env("AAI_KEY", secret), providers.WithPollInterval(time.Millisecond))
	require.NoError(t, err)
	call := providertest.Call(p, jobs.Transcriptions, `{"type":"audio","url":"https://media.test/a.mp3"}`, "")
	call.Media = providertest.AudioMedia(t, 281)
	return a, call
}

func TestSubmitsThenReadsTheTranscript(t *testing.T) {
	t.Parallel()
	f := &fake{statuses: []string{"queued", "processing", "completed"}}
	a, call := newAdapter(t, f)
	call.Options = json.RawMessage(`{"language":"en-US","include_usage":true,"format":"srt"}`)
	ctx := context.Background()

	handle, err := a.Submit(ctx, call)
	require.NoError(t, err)
	require.Equal(t, transcriptID, handle)
	require.Equal(t, []string{"RIFF....WAVE"}, f.uploads, "the extracted audio is uploaded")
	require.Equal(t, map[string]any{"audio_url": uploadURL, "language_code": "en_us", "speech_model": "universal",
		"punctuate": true, "format_text": true}, f.requests[0])

	check, err := a.Check(ctx, providers.Call{Service: call.Service, Provider: call.Provider, Input: call.Input, Options: call.Options}, handle)
	require.NoError(t, err)
	require.Equal(t, providers.Check{Progress: 5}, check)
	check, err = a.Check(ctx, call, handle)
	require.NoError(t, err)
	require.Equal(t, providers.Check{Progress: 50}, check)
	check, err = a.Check(ctx, call, handle)
	require.NoError(t, err)
	require.True(t, check.Done)
	var res jobs.TranscriptionResult
	require.NoError(t, json.Unmarshal(check.Result, &res))
	require.Equal(t, "srt", res.Format)
	require.Equal(t, "en-US", res.Language)
	require.InDelta(t, 281, res.Duration, 0)
	require.Len(t, res.Segments, 2, "the sentences, without diarization")
	require.Equal(t, jobs.Segment{Start: 0.25, End: 6.35, Text: "Smoke from hundreds of wildfires in Canada is triggering air quality alerts throughout the US.",
		Confidence: ptr(0.72412), Words: []jobs.Word{
			{Start: 0.25, End: 0.65, Text: "Smoke", Confidence: ptr(0.97465)},
			{Start: 0.73, End: 1.022, Text: "from", Confidence: ptr(0.99999)},
			{Start: 5.99, End: 6.35, Text: "US.", Confidence: ptr(0.99)},
		}}, res.Segments[0], "the sentence's words, in seconds")
	require.Empty(t, res.Segments[1].Words, "a sentence without words")
	require.Contains(t, res.Text, "Skylines from Maine")
	require.InDelta(t, 0.0065*281/60, *res.Usage.Cost, 1e-9)
}

func ptr[T any](v T) *T { return &v }

func TestDiarizationAndDetection(t *testing.T) {
	t.Parallel()
	f := &fake{statuses: []string{"completed"}}
	a, call := newAdapter(t, f)
	call.Options = json.RawMessage(`{"diarization":true,"language":"auto"}`)
	var progress []int
	call.Report = func(p int) { progress = append(progress, p) }
	out, err := a.Run(context.Background(), call)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"audio_url": uploadURL, "language_detection": true, "speaker_labels": true,
		"speech_model": "universal", "punctuate": true, "format_text": true}, f.requests[0])
	var res jobs.TranscriptionResult
	require.NoError(t, json.Unmarshal(out, &res))
	require.Equal(t, "en-US", res.Language, "detected: en_us")
	require.Equal(t, []string{"speaker_1", "speaker_2"}, []string{res.Segments[0].Speaker, res.Segments[1].Speaker})
	require.Equal(t, []string{"Smoke", "from"}, []string{res.Segments[0].Words[0].Text, res.Segments[0].Words[1].Text}, "the utterance's words")
	require.Nil(t, res.Usage)

	out, err = a.Run(context.Background(), withOptions(call, `{"diarization":true,"timestamps":false}`))
	require.NoError(t, err)
	require.NotContains(t, string(out), `"words"`, "words only with timestamps")
	require.Contains(t, string(out), `"speaker_1"`)

	for lang, code := range map[string]string{"en-GB": "en_uk", "de-AT": "de", "fr": "fr", "pt-BR": "pt"} {
		_, err := a.Submit(context.Background(), withOptions(call, `{"language":"`+lang+`"}`))
		require.NoError(t, err)
		require.Equal(t, code, f.requests[len(f.requests)-1]["language_code"], lang)
	}
}

func withOptions(call providers.Call, options string) providers.Call {
	call.Options = json.RawMessage(options)
	return call
}

func TestFailuresAreClassified(t *testing.T) {
	t.Parallel()
	f := &fake{statuses: []string{"error"}}
	a, call := newAdapter(t, f)
	_, err := a.Run(context.Background(), call)
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Says: "File does not appear to contain audio", Secret: secret})

	big := call
	big.Media = &providers.Media{Path: call.Media.Path, Size: 2 << 20}
	_, err = a.Submit(context.Background(), big)
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Says: "larger than the 1 MB", Secret: secret})

	noMedia := call
	noMedia.Media = nil
	_, err = a.Submit(context.Background(), noMedia)
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Says: "media stage", Secret: secret})

	_, err = assemblyai.New(&providers.Provider{ID: "x", Settings: map[string]any{"base_url": "ftp://x"}}, providertest.NoEnv())
	require.ErrorContains(t, err, "base_url")
	require.ErrorContains(t, err, "api_key_env is missing")
}

func TestAnswersAreClassified(t *testing.T) {
	t.Parallel()
	retry := []string{"Retry-After", "7"}
	providertest.RunStatusCases(t, secret, []providertest.StatusCase{
		{Name: "bad key", Status: 401, Body: `{"error":"Authentication error, API token missing/invalid"}`, Header: retry, Kind: providers.KindPermanent, Says: "API token missing/invalid"},
		{Name: "bad request", Status: 400, Body: `{"error":"Invalid language_code"}`, Header: retry, Kind: providers.KindPermanent, Says: "Invalid language_code"},
		{Name: "rate limited", Status: 429, Body: `{"error":"Too many requests"}`, Header: retry, Kind: providers.KindRetryable, Says: "Too many requests", RetryAfter: 7 * time.Second},
		{Name: "unavailable", Status: 503, Body: ``, Header: retry, Kind: providers.KindRetryable, Says: "answered 503", RetryAfter: 7 * time.Second},
	}, func(t *testing.T, v *providertest.Vendor) []error {
		a, call := adapterOf(t, v)
		_, submitErr := a.Submit(context.Background(), call)
		_, checkErr := a.Check(context.Background(), call, transcriptID)
		return []error{submitErr, checkErr}
	})
}

func TestPurgeDeletesTheTranscript(t *testing.T) {
	t.Parallel()
	f := &fake{statuses: []string{"completed"}}
	a, call := newAdapter(t, f)
	var _ providers.Purger = a
	ctx := context.Background()
	handle, err := a.Submit(ctx, call)
	require.NoError(t, err)

	require.NoError(t, a.Purge(ctx, providers.Call{Service: call.Service, Provider: call.Provider}, handle))
	require.True(t, f.deleted)
	check, err := a.Check(ctx, call, handle)
	require.NoError(t, err)
	var res jobs.TranscriptionResult
	require.NoError(t, json.Unmarshal(check.Result, &res))
	require.Equal(t, "Deleted by user.", res.Text, "AssemblyAI keeps the record, not the transcript")

	require.NoError(t, a.Purge(ctx, call, handle), "deleting again succeeds")
	require.NoError(t, a.Purge(ctx, call, "5551722-f677-48a6-9287-39c0aafd9ac1"), "a transcript AssemblyAI does not know is gone already")
}

func TestPurgeFailuresAreClassified(t *testing.T) {
	t.Parallel()
	providertest.RunStatusCases(t, secret, []providertest.StatusCase{
		{Name: "server error", Status: 500, Body: `{"error":"Internal server error"}`, Kind: providers.KindRetryable, Says: "Internal server error"},
		{Name: "rate limited", Status: 429, Body: `{"error":"Too many requests"}`, Header: []string{"Retry-After", "4"}, Kind: providers.KindRetryable, Says: "Too many requests", RetryAfter: 4 * time.Second},
		{Name: "bad key", Status: 401, Body: `{"error":"Authentication error, API token missing/invalid"}`, Kind: providers.KindPermanent, Says: "API token missing/invalid"},
	}, func(t *testing.T, v *providertest.Vendor) []error {
		v.Check(func(r *http.Request) {
			assert.Equal(t, http.MethodDelete+" /v2/transcript/"+transcriptID, r.Method+" "+r.URL.Path)
		})
		a, call := adapterOf(t, v)
		return []error{a.Purge(context.Background(), call, transcriptID)}
	})
}
