package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
)

// fakeAssemblyAI speaks AssemblyAI's transcript API (see
// providers/assemblyai for the protocol tests): uploads and transcripts
// are counted, and the transcript stays "processing" until released.
// With holdFirstCheck, the first read of the transcript answers only once
// the test closes it.
type fakeAssemblyAI struct {
	*httptest.Server
	mu             sync.Mutex
	uploads        int
	submits        int
	checks         int
	released       bool
	holdFirstCheck chan struct{}
}

const fakeAssemblyAIKey = "fake-assemblyai-key"

func newFakeAssemblyAI(t *testing.T, released bool) *fakeAssemblyAI {
	f := &fakeAssemblyAI{released: released}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.Header.Get("Authorization") != fakeAssemblyAIKey {
			http.Error(w, `{"error":"Authentication error, API token missing/invalid"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.Method + " " + r.URL.Path {
		case "POST /v2/upload":
			_, _ = io.Copy(io.Discard, r.Body)
			f.uploads++
			fmt.Fprintf(w, `{"upload_url":"https://cdn.assemblyai.test/upload/%d"}`, f.uploads)
		case "POST /v2/transcript":
			f.submits++
			fmt.Fprintf(w, `{"id":"transcript-%d","status":"queued"}`, f.submits)
		case "GET /v2/transcript/transcript-1":
			f.checks++
			if hold := f.holdFirstCheck; hold != nil && f.checks == 1 {
				f.mu.Unlock()
				select {
				case <-hold:
				case <-r.Context().Done():
				}
				f.mu.Lock()
			}
			if !f.released {
				_, _ = io.WriteString(w, `{"id":"transcript-1","status":"processing"}`)
				return
			}
			_, _ = io.WriteString(w, `{"id":"transcript-1","status":"completed","language_code":"en_us","audio_duration":2,
"text":"Hello from the fake vendor.","utterances":null}`)
		case "GET /v2/transcript/transcript-1/sentences":
			_, _ = io.WriteString(w, `{"sentences":[{"text":"Hello from the fake vendor.","start":0,"end":2000,"confidence":0.9,"speaker":null}]}`)
		default:
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAssemblyAI) counts() (uploads, submits int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.uploads, f.submits
}

// checked is how many times the transcript was read.
func (f *fakeAssemblyAI) checked() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checks
}

// holdTheFirstCheck makes the first read of the transcript wait until the
// returned channel is closed.
func (f *fakeAssemblyAI) holdTheFirstCheck() chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holdFirstCheck = make(chan struct{})
	return f.holdFirstCheck
}

func (f *fakeAssemblyAI) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = true
}

// provider is the catalog entry of the fake, for jobs that name it.
func (f *fakeAssemblyAI) provider() string {
	return vendorProvider("assemblyai", "AssemblyAI (fake)", f.URL, "FAKE_ASSEMBLYAI_KEY")
}

func TestAsyncVendorJobSurvivesARestartAndIsSubmittedOnce(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t)
	vendor := newFakeAssemblyAI(t, false)
	hold := vendor.holdTheFirstCheck()
	g := newGatewayEnv(t, "", "", []string{"FAKE_ASSEMBLYAI_KEY=" + fakeAssemblyAIKey},
		"--providers", writeCatalog(t, "providers:\n"+vendor.provider()))

	id := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"input":{"type":"audio","url":"`+
		g.url("/dev/samples/tone.wav")+`"},"options":{"format":"vtt"}}}}`).Data.ID
	require.Eventually(t, func() bool { _, submits := vendor.counts(); return submits == 1 }, 60*time.Second, 100*time.Millisecond)
	g.waitFor("transcriptions", id, 30*time.Second, func(d jobDoc) bool { return d.Data.Attributes.Status == "processing" })
	// The workflow checks only once the submit is recorded: a kill before
	// that would send the job again (AssemblyAI takes no idempotency key,
	// docs/providers.md), which is not what this test is about.
	require.Eventually(t, func() bool { return vendor.checked() > 0 }, 60*time.Second, 100*time.Millisecond)

	// The gateway dies in the middle of a check, and the vendor works
	// while it is down and back. The cut check runs again once its
	// heartbeat is missed (seconds), not at its start-to-close timeout
	// (two minutes, twice what this test waits).
	g.kill()
	close(hold)
	g.start()
	vendor.release()

	done := g.waitEnded("transcriptions", id, 60*time.Second, "completed")
	uploads, submits := vendor.counts()
	require.Equal(t, 1, uploads, "the audio is uploaded once")
	require.Equal(t, 1, submits, "the job is submitted once")
	var result struct {
		Text        string `json:"text"`
		Format      string `json:"format"`
		Language    string `json:"language"`
		DownloadURL string `json:"download_url"`
	}
	decodeAs(t, done.Data.Attributes.Result, &result)
	require.Equal(t, "Hello from the fake vendor.", result.Text)
	require.Equal(t, "en-US", result.Language)
	require.Equal(t, "vtt", result.Format)
	require.NotEmpty(t, result.DownloadURL)
	resp, err := http.Get(result.DownloadURL)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "WEBVTT")
	require.Contains(t, string(body), "Hello from the fake vendor.")
}
