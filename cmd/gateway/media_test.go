package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
)

// download GETs a result's download_url, without a token, and returns the
// file.
func (g *gateway) download(result json.RawMessage) string {
	g.t.Helper()
	link := resultMember[string](g.t, result, "download_url")
	require.NotEmpty(g.t, link, "the result has a download_url: %v", result)
	resp, err := http.Get(link)
	require.NoError(g.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(g.t, err)
	require.Equal(g.t, http.StatusOK, resp.StatusCode, "%s", body)
	return string(body)
}

// resultMember is one member of a result object.
func resultMember[T any](t *testing.T, result json.RawMessage, name string) T {
	t.Helper()
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(result, &members))
	var v T
	if raw, ok := members[name]; ok {
		require.NoError(t, json.Unmarshal(raw, &v), "result.%s", name)
	}
	return v
}

// activitiesOf lists the activity types in the job workflow's history;
// none before the workflow has started.
func (g *gateway) activitiesOf(id string) []string {
	g.t.Helper()
	tc, err := client.Dial(client.Options{HostPort: g.temporal})
	require.NoError(g.t, err)
	defer tc.Close()
	var names []string
	iter := tc.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		event, err := iter.Next()
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return nil // its start still waits in the outbox
		}
		require.NoError(g.t, err)
		if a := event.GetActivityTaskScheduledEventAttributes(); a != nil {
			names = append(names, a.GetActivityType().GetName())
		}
	}
	return names
}

func TestMediaEndToEnd(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t)
	g := newGateway(t, "")

	// A real video: probed, its audio extracted, the steps in the history,
	// and a download_url that serves the transcript.
	video := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"input":{"type":"video","url":"`+
		g.url("/dev/samples/speech.mp4")+`","audio_track":0},"options":{"format":"vtt","timestamps":true}}}}`)
	done := g.waitEnded("transcriptions", video.Data.ID, 60*time.Second, "completed")
	require.InDelta(t, 7.3, resultMember[float64](t, done.Data.Attributes.Result, "duration"), 0.2, "the probed duration of the sample")
	require.True(t, strings.HasPrefix(g.download(done.Data.Attributes.Result), "WEBVTT"))
	steps := g.activitiesOf(video.Data.ID)
	for _, step := range []string{"FetchMedia", "ProbeMedia", "ExtractAudio", "RemoveJobMedia"} {
		require.Contains(t, steps, step, "the media stage shows in the history: %v", steps)
	}
	require.Less(t, slices.Index(steps, "ExtractAudio"), slices.Index(steps, "RemoveJobMedia"))

	// A tampered or expired link is refused.
	link, err := url.Parse(resultMember[string](t, done.Data.Attributes.Result, "download_url"))
	require.NoError(t, err)
	for name := range link.Query() {
		tampered := *link
		q := link.Query()
		q.Set(name, q.Get(name)+"0")
		tampered.RawQuery = q.Encode()
		resp, err := http.Get(tampered.String())
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "changed %s", name)
	}

	// A text file sent as audio.
	text := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"input":{"type":"audio","url":"`+
		g.url("/dev/samples/document.txt")+`"}}}}`)
	failed := g.waitFailed("transcriptions", text.Data.ID, 60*time.Second, "AUDIO_UNREADABLE")
	require.Empty(t, failed.Data.Attributes.RoutingHistory, "no provider was tried")

	// A document translation returns the translated document.
	doc := g.create("translations", `{"data":{"type":"translation-job","attributes":{"input":{"type":"document","url":"`+
		g.url("/dev/samples/document.txt")+`","target_language":"de"}}}}`)
	translated := g.waitEnded("translations", doc.Data.ID, 60*time.Second, "completed")
	require.Contains(t, g.download(translated.Data.Attributes.Result), "This is a sample document for translation jobs.")

	// The work files are gone once the jobs ended (the workflow removes
	// them just after projecting the outcome a GET reads); result files
	// stay.
	var work []string
	require.Eventually(t, func() bool {
		work, _ = filepath.Glob(filepath.Join(g.dataDir, "files", "work", "*", "*"))
		return len(slicesWithout(work, ".attrs")) == 0
	}, 15*time.Second, 50*time.Millisecond, "work files left: %v", work)
	results, _ := filepath.Glob(filepath.Join(g.dataDir, "files", "results", "*", "*"))
	require.NotEmpty(t, results)
}

// slicesWithout drops the names ending in suffix.
func slicesWithout(names []string, suffix string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return strings.HasSuffix(n, suffix) })
}

// TestKillDuringExtractionEndsTheJobOnce kills the gateway while ffmpeg
// extracts the audio of a long video: after the restart the job ends once,
// with one result file.
func TestKillDuringExtractionEndsTheJobOnce(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t)
	g := newGateway(t, "")
	long := mediatest.Video(t, t.TempDir(), 600, 1)
	served := filepath.Join(g.dataDir, "long.mp4")
	require.NoError(t, os.Rename(long, served))
	media := &http.Server{Handler: http.FileServer(http.Dir(g.dataDir))}
	addr := freeAddr(t)
	listener, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", addr)
	require.NoError(t, err)
	go func() { _ = media.Serve(listener) }()
	t.Cleanup(func() { _ = media.Close() })

	job := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"input":{"type":"video","url":"http://`+addr+`/long.mp4"}}}}`)
	deadline := time.Now().Add(60 * time.Second)
	for !slices.Contains(g.activitiesOf(job.Data.ID), "ExtractAudio") {
		require.True(t, time.Now().Before(deadline), "extraction never started")
		time.Sleep(50 * time.Millisecond)
	}
	g.kill()
	g.start()

	done := g.waitEnded("transcriptions", job.Data.ID, 120*time.Second, "completed")
	results, _ := filepath.Glob(filepath.Join(g.dataDir, "files", "results", job.Data.ID, "*"))
	require.Len(t, slicesWithout(results, ".attrs"), 1, "one result file: %v", results)
	require.NotEmpty(t, g.download(done.Data.Attributes.Result))
}

// TestDevWithoutFFmpeg: dev starts without ffmpeg, says once what is
// missing and how to install it, and fails media jobs with a clear error
// rather than pretending.
func TestDevWithoutFFmpeg(t *testing.T) {
	t.Parallel()
	g := newGatewayEnv(t, "", "", []string{"PATH=" + t.TempDir()})
	require.Equal(t, 1, strings.Count(g.logs.String(), "media jobs will fail until ffmpeg is installed"), "%s", g.logs.String())
	require.Contains(t, g.logs.String(), "apt-get install ffmpeg")

	job := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"input":{"type":"video","url":"`+
		g.url("/dev/samples/speech.mp4")+`"}}}}`)
	g.waitFailed("transcriptions", job.Data.ID, 60*time.Second, "MEDIA_PROCESSING_UNAVAILABLE")

	llm := g.create("llm-tasks", llmTaskBody)
	require.Equal(t, "completed", g.waitFor("llm-tasks", llm.Data.ID, 60*time.Second, terminal).Data.Attributes.Status, "jobs without media run as ever")
}
