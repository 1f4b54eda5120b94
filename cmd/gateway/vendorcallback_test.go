package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
)

// fakeDeepgram speaks Deepgram's pre-recorded API in callback mode (see
// providers/deepgram for the protocol tests): POST /v1/listen?callback=
// is answered with a request_id at once, and the transcription is posted
// to the callback address when the test says so.
type fakeDeepgram struct {
	*httptest.Server
	mu        sync.Mutex
	submits   int
	callbacks []string
}

const fakeDeepgramKey = "fake-deepgram-key"

// fakeDeepgramCallbackBase is the --callback-url the gateway is given; the
// fake posts to the gateway's real address instead (post's base).
const fakeDeepgramCallbackBase = "https://gateway.example.test"

func newFakeDeepgram(t *testing.T) *fakeDeepgram {
	f := &fakeDeepgram{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.Header.Get("Authorization") != "Token "+fakeDeepgramKey {
			http.Error(w, `{"err_code":"INVALID_AUTH","err_msg":"Invalid credentials."}`, http.StatusUnauthorized)
			return
		}
		callback := r.URL.Query().Get("callback")
		if r.Method+" "+r.URL.Path != "POST /v1/listen" || callback == "" {
			http.Error(w, `{"err_code":"Bad Request","err_msg":"this fake takes callback requests only"}`, http.StatusBadRequest)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		f.submits++
		f.callbacks = append(f.callbacks, callback)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"request_id":"a847f427-4ad5-4d67-9b95-db801e58251c"}`)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeDeepgram) submitted() (int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.submits, append([]string(nil), f.callbacks...)
}

// post delivers the transcription to callback, rebased on base (the
// gateway's address), and returns the status the gateway answered.
func (f *fakeDeepgram) post(t *testing.T, callback, base string) int {
	t.Helper()
	require.True(t, strings.HasPrefix(callback, fakeDeepgramCallbackBase+"/"), callback)
	target := base + strings.TrimPrefix(callback, fakeDeepgramCallbackBase)
	resp, err := http.Post(target, "application/json", strings.NewReader(`{"metadata":{"request_id":"a847f427-4ad5-4d67-9b95-db801e58251c","duration":2.0},
"results":{"channels":[{"alternatives":[{"transcript":"Hello from the fake Deepgram.","confidence":0.98}]}],
"utterances":[{"start":0.1,"end":1.9,"confidence":0.97,"channel":0,"transcript":"Hello from the fake Deepgram.","speaker":0}]}}`))
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// provider is the catalog entry of the fake, priced above the sandboxes
// so that only jobs naming it go to it.
func (f *fakeDeepgram) provider() string {
	return vendorProvider("deepgram", "Deepgram (fake)", f.URL, "FAKE_DEEPGRAM_KEY")
}

func TestVendorCallbackSurvivesARestartAndWakesTheJob(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t)
	vendor := newFakeDeepgram(t)
	g := newGatewayEnv(t, "", "", []string{"FAKE_DEEPGRAM_KEY=" + fakeDeepgramKey},
		"--providers", writeCatalog(t, "providers:\n"+vendor.provider()), "--callback-url", fakeDeepgramCallbackBase)

	id := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"input":{"type":"audio","url":"`+
		g.url("/dev/samples/tone.wav")+`"},"options":{"format":"srt"}}}}`).Data.ID
	require.Eventually(t, func() bool { n, _ := vendor.submitted(); return n == 1 }, 60*time.Second, 100*time.Millisecond)
	_, callbacks := vendor.submitted()
	u, err := url.Parse(callbacks[0])
	require.NoError(t, err)
	require.Equal(t, "/v1/provider-callbacks/"+id+"/1", u.Path, "the address names the job and the attempt")
	require.NotEmpty(t, u.Query().Get("token"))

	tc := temporalClient(t, g.temporal)
	history := func() []enumspb.EventType {
		var types []enumspb.EventType
		iter := tc.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			e, err := iter.Next()
			if err != nil {
				return nil
			}
			types = append(types, e.GetEventType())
		}
		return types
	}
	// The submit is recorded once the workflow waits on its first timer: a
	// kill before that would submit again (Deepgram takes no idempotency
	// key, docs/providers.md), which is not what this test is about.
	require.Eventually(t, func() bool {
		for _, e := range history() {
			if e == enumspb.EVENT_TYPE_TIMER_STARTED {
				return true
			}
		}
		return false
	}, 60*time.Second, 100*time.Millisecond)

	// Deepgram finishes while the gateway is down: its post fails, and it
	// posts again once the gateway is back.
	g.kill()
	_, err = http.Post(g.url(u.Path+"?"+u.RawQuery), "application/json", strings.NewReader("{}"))
	require.Error(t, err, "the gateway is down")
	g.start()
	forged := *u
	forged.RawQuery = "token=" + strings.Repeat("A", len(u.Query().Get("token")))
	require.Equal(t, http.StatusForbidden, vendor.post(t, forged.String(), g.url("")), "a forged token is refused")
	require.Equal(t, http.StatusNoContent, vendor.post(t, callbacks[0], g.url("")))

	done := g.waitEnded("transcriptions", id, 120*time.Second, "completed")
	n, _ := vendor.submitted()
	require.Equal(t, 1, n, "the job is submitted once")
	var result struct {
		Text     string `json:"text"`
		Format   string `json:"format"`
		Duration float64
	}
	decodeAs(t, done.Data.Attributes.Result, &result)
	require.Equal(t, "Hello from the fake Deepgram.", result.Text)
	require.Equal(t, "srt", result.Format)

	// The post ended the wait: the timer was cancelled, not waited out.
	require.Contains(t, history(), enumspb.EVENT_TYPE_TIMER_CANCELED)
	// And a post for a finished job is refused.
	require.Equal(t, http.StatusConflict, vendor.post(t, callbacks[0], g.url("")))
}
