package jobs_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

func TestEstimateUsage(t *testing.T) {
	t.Parallel()
	n, known := jobs.EstimateUsage(jobs.Translations, json.RawMessage(`{"type":"text","content":"Grüße","target_language":"en"}`), nil, nil)
	require.True(t, known)
	require.EqualValues(t, 5, *n.Characters, "characters, not bytes")

	_, known = jobs.EstimateUsage(jobs.Translations, json.RawMessage(`{"type":"document","url":"https://x.example/a.docx","target_language":"en"}`), nil, nil)
	require.False(t, known, "a document's characters are known once it is read")

	n, known = jobs.EstimateUsage(jobs.LLMTasks, json.RawMessage(`{"type":"text","text":"12345678","prompt":"1234"}`), nil, nil)
	require.True(t, known)
	require.EqualValues(t, 3, *n.InputTokens, "12 characters at four a token")
	require.EqualValues(t, jobs.DefaultOutputTokens, *n.OutputTokens)
	n, _ = jobs.EstimateUsage(jobs.LLMTasks, json.RawMessage(`{"type":"text","text":"12345678","prompt":"1234"}`), json.RawMessage(`{"max_tokens":50}`), nil)
	require.EqualValues(t, 50, *n.OutputTokens, "the answer is at most max_tokens")

	_, known = jobs.EstimateUsage(jobs.Transcriptions, json.RawMessage(`{"type":"audio","url":"https://x.example/a.wav"}`), nil, nil)
	require.False(t, known, "media is known once probed")
	seconds := 61.5
	n, known = jobs.EstimateUsage(jobs.Transcriptions, json.RawMessage(`{"type":"audio","url":"https://x.example/a.wav"}`), nil, &seconds)
	require.True(t, known)
	require.InDelta(t, 61.5, *n.MediaSeconds, 1e-9)
}
