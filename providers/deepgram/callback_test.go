package deepgram_test

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
	"github.com/ai-job-gateway/gateway/providers/deepgram"
	"github.com/ai-job-gateway/gateway/providers/providertest"
)

// callbackFake is Deepgram in callback mode: POST /v1/listen?callback=
// answers {"request_id"} at once, then posts callbackBody to the callback
// URL, as Deepgram's pre-recorded callback documentation says; f records
// the requests.
func callbackFake(t *testing.T, f *fake, callbackBody string) *providertest.Vendor {
	t.Helper()
	return f.serve(t, providertest.NewVendor(t, func(w http.ResponseWriter, r *http.Request) {
		providertest.WriteJSON(w, `{"request_id":"a847f427-4ad5-4d67-9b95-db801e58251c"}`)
		callback := r.URL.Query().Get("callback")
		go func() {
			resp, err := http.Post(callback, "application/json", strings.NewReader(callbackBody))
			if assert.NoError(t, err) {
				_ = resp.Body.Close()
			}
		}()
	}))
}

func callbackAdapter(t *testing.T, base string) (*deepgram.CallbackAdapter, providers.Call) {
	t.Helper()
	p := providertest.Provider("dg", map[string]any{"base_url": base, "api_key_env": "DG_KEY", "callback_timeout_minutes": 5},
		jobs.Transcriptions, providers.Capability{Pricing: providers.Pricing{Unit: providers.PerMinute, Amount: 0.0043, Currency: "USD"}})
	a, err := deepgram.NewWithCallbacks(p, providertest.Env("DG_KEY", secret))
	require.NoError(t, err)
	call := providertest.Call(p, jobs.Transcriptions, `{"type":"audio","url":"https://media.test/a.mp3"}`, `{"diarization":true,"include_usage":true}`)
	call.Media = providertest.AudioMedia(t, 26)
	return a, call
}

func TestCallbackModeSubmitsWithTheCallbackAndMapsWhatIsPosted(t *testing.T) {
	t.Parallel()
	posted := make(chan []byte, 1)
	receiver := providertest.NewVendor(t, func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		assert.Equal(t, "token-of-job-1", r.URL.Query().Get("token"))
		posted <- data
		w.WriteHeader(http.StatusNoContent)
	})
	f := &fake{}
	a, call := callbackAdapter(t, callbackFake(t, f, listen).URL)

	call.CallbackURL = receiver.URL + "/v1/provider-callbacks/job-1/1?token=token-of-job-1"
	handle, err := a.Submit(context.Background(), call)
	require.NoError(t, err)
	require.Equal(t, "a847f427-4ad5-4d67-9b95-db801e58251c", handle)
	require.Equal(t, []string{providertest.Audio}, f.bodies)
	q := f.queries[0]
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
	require.Len(t, res.Segments[0].Words, 7, "the words of what is posted")
	require.InDelta(t, 0.0043*25.933313/60, *res.Usage.Cost, 1e-9)
}

func TestCallbackModeFailures(t *testing.T) {
	t.Parallel()
	a, call := callbackAdapter(t, "http://127.0.0.1:1")
	_, err := a.Submit(context.Background(), call)
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Code: jobs.CodeProviderRejected, Says: "no callback URL"})

	late := call
	late.Submitted = time.Now().Add(-6 * time.Minute)
	_, err = a.Check(context.Background(), late, "req-1")
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Code: jobs.CodeProviderUnavailable, Says: "did not post the result of request req-1 within 5m0s"})

	failed := call
	failed.Callback = []byte(`{"err_code":"Bad Request","err_msg":"Bad Request: failed to process audio: corrupt or unsupported data","request_id":"req-1"}`)
	_, err = a.Check(context.Background(), failed, "req-1")
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Code: jobs.CodeProviderRejected, Says: "corrupt or unsupported data"})

	garbled := call
	garbled.Callback = []byte(`{"metadata":{}}`)
	_, err = a.Check(context.Background(), garbled, "req-1")
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Code: jobs.CodeBadResponse, Says: "an answer Deepgram's API does not send"})

	p := &providers.Provider{ID: "dg", Settings: map[string]any{"api_key_env": "DG_KEY", "callback_timeout_minutes": 0}}
	_, err = deepgram.NewWithCallbacks(p, providertest.Env("DG_KEY", secret))
	require.ErrorContains(t, err, "callback_timeout_minutes")
}
