package deepgram_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/deepgram"
)

// callbackFake is Deepgram in callback mode: POST /v1/listen?callback=
// answers {"request_id"} at once, then posts the transcription to the
// callback URL, as Deepgram's pre-recorded callback documentation says.
func callbackFake(t *testing.T, callbackBody string) (base string, queries chan map[string][]string) {
	t.Helper()
	queries = make(chan map[string][]string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "Token "+secret, r.Header.Get("Authorization"))
		assert.Equal(t, "POST /v1/listen", r.Method+" "+r.URL.Path)
		data, _ := io.ReadAll(r.Body)
		assert.Equal(t, "RIFF....WAVE", string(data))
		queries <- r.URL.Query()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"request_id":"a847f427-4ad5-4d67-9b95-db801e58251c"}`)
		callback := r.URL.Query().Get("callback")
		go func() {
			resp, err := http.Post(callback, "application/json", strings.NewReader(callbackBody))
			if assert.NoError(t, err) {
				_ = resp.Body.Close()
			}
		}()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, queries
}

func callbackAdapter(t *testing.T, base string) (*deepgram.CallbackAdapter, providers.Call) {
	t.Helper()
	p := &providers.Provider{ID: "dg", Settings: map[string]any{"base_url": base, "api_key_env": "DG_KEY", "callback_timeout_minutes": 5},
		Services: map[jobs.ServiceID]*providers.Capability{jobs.Transcriptions: {
			Pricing: providers.Pricing{Unit: providers.PerMinute, Amount: 0.0043, Currency: "USD"}}}}
	a, err := deepgram.NewWithCallbacks(p, providers.WithLookupEnv(func(name string) (string, bool) { return secret, name == "DG_KEY" }))
	require.NoError(t, err)
	audio := filepath.Join(t.TempDir(), "audio.wav")
	require.NoError(t, os.WriteFile(audio, []byte("RIFF....WAVE"), 0o600))
	return a, providers.Call{Service: jobs.Transcriptions, Provider: p,
		Input:   json.RawMessage(`{"type":"audio","url":"https://media.test/a.mp3"}`),
		Options: json.RawMessage(`{"diarization":true,"include_usage":true}`),
		Media:   &providers.Media{Path: audio, ContentType: "audio/wav", Size: 12, Duration: 26}}
}

func TestCallbackModeSubmitsWithTheCallbackAndMapsWhatIsPosted(t *testing.T) {
	t.Parallel()
	posted := make(chan []byte, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		assert.Equal(t, "token-of-job-1", r.URL.Query().Get("token"))
		posted <- data
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	base, queries := callbackFake(t, listen)
	a, call := callbackAdapter(t, base)

	call.CallbackURL = receiver.URL + "/v1/provider-callbacks/job-1/1?token=token-of-job-1"
	handle, err := a.Submit(context.Background(), call)
	require.NoError(t, err)
	require.Equal(t, "a847f427-4ad5-4d67-9b95-db801e58251c", handle)
	q := <-queries
	require.Equal(t, call.CallbackURL, q["callback"][0])
	require.Equal(t, []string{"true"}, q["diarize"], "options are sent as in the synchronous mode")
	require.Equal(t, []string{"true"}, q["utterances"])

	// Nothing posted yet: not done, and no error before the timeout.
	check, err := a.Check(context.Background(), providers.Call{Service: call.Service, Provider: call.Provider,
		Input: call.Input, Options: call.Options, Submitted: time.Now().Add(-time.Minute)}, handle)
	require.NoError(t, err)
	require.False(t, check.Done)

	call.CallbackURL = ""
	call.Media = nil
	call.Callback = <-posted
	call.Submitted = time.Now().Add(-time.Minute)
	check, err = a.Check(context.Background(), call, handle)
	require.NoError(t, err)
	require.True(t, check.Done)
	var res jobs.TranscriptionResult
	require.NoError(t, json.Unmarshal(check.Result, &res))
	require.Contains(t, res.Text, "spacewalk")
	require.Equal(t, "en", res.Language)
	require.Len(t, res.Segments, 2)
	require.Equal(t, "speaker_2", res.Segments[1].Speaker)
	require.InDelta(t, 0.0043*25.933313/60, *res.Usage.Cost, 1e-9)
}

func TestCallbackModeFailures(t *testing.T) {
	t.Parallel()
	a, call := callbackAdapter(t, "http://127.0.0.1:1")
	permanent := func(t *testing.T, err error, code, says string) {
		t.Helper()
		var pe *providers.Error
		require.True(t, errors.As(err, &pe), "%v", err)
		require.Equal(t, providers.KindPermanent, pe.Kind)
		require.Equal(t, code, pe.Code)
		require.Contains(t, pe.Message, says)
	}

	_, err := a.Submit(context.Background(), call)
	permanent(t, err, jobs.CodeProviderRejected, "no callback URL")

	late := call
	late.Submitted = time.Now().Add(-6 * time.Minute)
	_, err = a.Check(context.Background(), late, "req-1")
	permanent(t, err, jobs.CodeProviderUnavailable, "did not post the result of request req-1 within 5m0s")

	failed := call
	failed.Callback = []byte(`{"err_code":"Bad Request","err_msg":"Bad Request: failed to process audio: corrupt or unsupported data","request_id":"req-1"}`)
	_, err = a.Check(context.Background(), failed, "req-1")
	permanent(t, err, jobs.CodeProviderRejected, "corrupt or unsupported data")

	garbled := call
	garbled.Callback = []byte(`{"metadata":{}}`)
	_, err = a.Check(context.Background(), garbled, "req-1")
	permanent(t, err, jobs.CodeBadResponse, "an answer Deepgram's API does not send")

	p := &providers.Provider{ID: "dg", Settings: map[string]any{"api_key_env": "DG_KEY", "callback_timeout_minutes": 0}}
	_, err = deepgram.NewWithCallbacks(p, providers.WithLookupEnv(func(string) (string, bool) { return secret, true }))
	require.ErrorContains(t, err, "callback_timeout_minutes")
}
