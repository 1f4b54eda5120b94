package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// countingLinks mints a different link on every call, so a test sees
// whether a response carries a fresh one.
type countingLinks struct {
	minted atomic.Int64
	fail   bool
}

func (l *countingLinks) SignedURL(_ context.Context, key string, expiry time.Duration) (string, error) {
	if l.fail {
		return "", errors.New("bucket unreachable")
	}
	n := l.minted.Add(1)
	return fmt.Sprintf("https://files.test/%s?ttl=%s&n=%d", key, expiry, n), nil
}

func TestResultFileIsLinkedFreshOnEveryRead(t *testing.T) {
	t.Parallel()
	links := &countingLinks{}
	b := setupConfigured(t, storetest.SQLite, func(cfg *api.Config) {
		cfg.Files = links
		cfg.LinkTTL = 15 * time.Minute
	})
	job := b.seed(t, jobs.Record{Service: "transcriptions", Status: jobs.StatusCompleted, Options: `{"format":"srt"}`,
		Result: `{"format":"srt","duration":2.5,"language":"en"}`, ResultFile: "results/j/transcript.srt"})

	first := b.do(t, http.MethodGet, jobPath("transcriptions", job.ID, ""), b.readToken(t), nil)
	first.requireStatus(t, http.StatusOK)
	result := first.object(t)["data"].(map[string]any)["attributes"].(map[string]any)["result"].(map[string]any)
	require.Equal(t, "https://files.test/results/j/transcript.srt?ttl=15m0s&n=1", result["download_url"])
	require.Equal(t, "srt", result["format"], "the rest of the result is unchanged")

	r := b.do(t, http.MethodGet, jobPath("transcriptions", job.ID, "/result"), b.readToken(t), nil, "Accept", "application/json")
	r.requireStatus(t, http.StatusOK)
	require.Equal(t, "https://files.test/results/j/transcript.srt?ttl=15m0s&n=2", r.object(t)["download_url"], "a fresh link on every read")

	r = b.do(t, http.MethodGet, jobPath("transcriptions", job.ID, "/result"), b.readToken(t), nil)
	r.requireStatus(t, http.StatusOK)
	require.NotContains(t, string(r.Body), "download_url", "the subtitle file itself carries no link")

	list := b.do(t, http.MethodGet, "/v1/jobs", b.readToken(t), nil)
	list.requireStatus(t, http.StatusOK)
	require.NotContains(t, string(list.Body), "download_url", "listings leave results out")
	require.Equal(t, int64(2), links.minted.Load())
}

func TestJobWithoutResultFileHasNoLink(t *testing.T) {
	t.Parallel()
	links := &countingLinks{fail: true}
	b := setupConfigured(t, storetest.SQLite, func(cfg *api.Config) { cfg.Files = links })
	job := b.seed(t, jobs.Record{Service: "translations", Status: jobs.StatusCompleted,
		Input:  `{"type":"text","content":"Hallo","target_language":"en"}`,
		Result: `{"source_language":"de","target_language":"en","content":"Hello","character_count":5}`})
	r := b.do(t, http.MethodGet, jobPath("translations", job.ID, ""), b.readToken(t), nil)
	r.requireStatus(t, http.StatusOK)
	require.NotContains(t, string(r.Body), "download_url")

	linked := b.seed(t, jobs.Record{Service: "translations", Status: jobs.StatusCompleted,
		Input:  `{"type":"document","url":"https://docs.test/a.txt","target_language":"en"}`,
		Result: `{"source_language":"de","target_language":"en","character_count":5}`, ResultFile: "results/k/translation.txt"})
	r = b.do(t, http.MethodGet, jobPath("translations", linked.ID, ""), b.readToken(t), nil)
	r.requireStatus(t, http.StatusInternalServerError)
	require.NotContains(t, string(r.Body), "bucket", "the store's error stays in the log")
}
