package jobs_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

func TestUsageIsShownOnceTheJobFinished(t *testing.T) {
	t.Parallel()
	usage := `{"unit":"minute","quantity":0.05,"native":{"media_seconds":3},"cost":{"amount":0.0003,"currency":"USD"},"price_version":"v"}`
	now := time.Now()
	rec := &jobs.Record{ID: "j", Service: jobs.Transcriptions, Status: jobs.StatusCompleted, Result: `{"duration":3}`,
		Usage: usage, CreatedAt: now, CompletedAt: &now}
	for _, detail := range []jobs.Detail{jobs.Full, jobs.Listing} {
		require.JSONEq(t, usage, string(rec.Attributes(detail).Usage))
	}
	rec.Status = jobs.StatusProcessing
	require.Nil(t, rec.Attributes(jobs.Full).Usage)

	// A webhook event reads it from the stored record.
	rec.Status = jobs.StatusCompleted
	snap := jobs.Snapshot{ID: "j", Service: jobs.Transcriptions, Status: jobs.StatusCompleted, CreatedAt: now, CompletedAt: &now}
	snap, err := snap.WithDocuments(rec)
	require.NoError(t, err)
	body, err := jobs.WebhookBody("transcription.completed", snap)
	require.NoError(t, err)
	var hook struct {
		Data struct {
			Attributes struct {
				Usage json.RawMessage `json:"usage"`
			} `json:"attributes"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &hook))
	require.JSONEq(t, usage, string(hook.Data.Attributes.Usage))
	require.Nil(t, snap.WithoutDocuments().Usage)
}

func TestMeasureUsage(t *testing.T) {
	t.Parallel()
	n, est := jobs.MeasureUsage(jobs.VideoAnalyses, json.RawMessage(`{"url":"u"}`),
		json.RawMessage(`{"video_metadata":{"duration":12.5},"usage":{"input_tokens":900,"output_tokens":60}}`))
	require.False(t, est)
	require.Equal(t, 12.5, *n.MediaSeconds)
	require.Equal(t, int64(900), *n.InputTokens, "tokens a provider reports are kept for per_token pricing")

	n, _ = jobs.MeasureUsage(jobs.Transcriptions, nil, json.RawMessage(`{"duration":3.02}`))
	require.Equal(t, 3.02, *n.MediaSeconds)

	n, est = jobs.MeasureUsage(jobs.LLMTasks, json.RawMessage(`{"type":"document","url":"u","prompt":"12345"}`),
		json.RawMessage(`{"content":"abc","usage":{"output_tokens":7}}`))
	require.True(t, est, "input tokens estimated")
	require.Equal(t, int64(2), *n.InputTokens)
	require.Equal(t, int64(7), *n.OutputTokens)
}

func TestCostAmountIsExact(t *testing.T) {
	t.Parallel()
	for nanos, want := range map[int64]string{0: "0", 1: "0.000000001", 100000: "0.0001", 1_500_000_000: "1.5", -20: "-0.00000002"} {
		require.Equal(t, want, jobs.NanosDecimal(nanos))
	}
}
