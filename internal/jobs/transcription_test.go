package jobs_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

func TestSegmentWordsRoundTrip(t *testing.T) {
	t.Parallel()
	confidence := 0.92
	res := jobs.TranscriptionResult{Format: "json", Duration: 2, Segments: []jobs.Segment{
		{Start: 0.1, End: 1.2, Text: "hello world", Words: []jobs.Word{
			{Start: 0.1, End: 0.5, Text: "hello", Confidence: &confidence},
			{Start: 0.6, End: 1.2, Text: "world"},
		}},
	}}
	data, err := json.Marshal(res)
	require.NoError(t, err)
	require.JSONEq(t, `{"format":"json","duration":2,"segments":[{"start":0.1,"end":1.2,"text":"hello world","words":[
		{"start":0.1,"end":0.5,"text":"hello","confidence":0.92},{"start":0.6,"end":1.2,"text":"world"}]}]}`, string(data),
		"a word without a confidence has none, not null")

	var back jobs.TranscriptionResult
	require.NoError(t, json.Unmarshal(data, &back))
	require.Equal(t, res, back)
}

func TestSegmentWithoutWordsHasNoWordsField(t *testing.T) {
	t.Parallel()
	for _, words := range [][]jobs.Word{nil, {}} {
		data, err := json.Marshal(jobs.Segment{Start: 0, End: 1, Text: "hi", Words: words})
		require.NoError(t, err)
		require.JSONEq(t, `{"start":0,"end":1,"text":"hi"}`, string(data), "words omitted, never null or empty")
	}
	var seg jobs.Segment
	require.NoError(t, json.Unmarshal([]byte(`{"start":0,"end":1,"text":"hi"}`), &seg))
	require.Nil(t, seg.Words)
}

func TestWordsDoNotChangeSubtitles(t *testing.T) {
	t.Parallel()
	plain := []byte(`{"format":"srt","duration":2,"segments":[{"start":0,"end":1.5,"text":"hello world"}]}`)
	withWords := []byte(`{"format":"srt","duration":2,"segments":[{"start":0,"end":1.5,"text":"hello world",
		"words":[{"start":0,"end":0.6,"text":"hello","confidence":0.9},{"start":0.7,"end":1.5,"text":"world"}]}]}`)
	r := parse(t, jobs.Transcriptions, valid[jobs.Transcriptions][0], `{"format":"srt"}`)
	for _, mediaType := range []string{jobs.MediaSRT, jobs.MediaVTT} {
		want, err := r.Render(mediaType, plain)
		require.NoError(t, err)
		got, err := r.Render(mediaType, withWords)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%s renders segments, one cue each", mediaType)
	}
}

func TestTranslateToEnglish(t *testing.T) {
	t.Parallel()
	in := `{"type":"audio","url":"https://x.test/a"}`
	req := parse(t, jobs.Transcriptions, in, `{"translate_to_english":true,"language":"de","timestamps":false}`).Requirements()
	require.Equal(t, jobs.Requirements{Service: jobs.Transcriptions, Language: "de", TranslateToEnglish: true}, req,
		"the language is still the spoken one")
	require.False(t, parse(t, jobs.Transcriptions, in, `{"translate_to_english":false}`).Requirements().TranslateToEnglish)
	require.False(t, parse(t, jobs.Transcriptions, in, `{}`).Requirements().TranslateToEnglish, "false by default")

	_, err := spec(t, jobs.Transcriptions).Parse(json.RawMessage(in), json.RawMessage(`{"translate_to_english":"yes"}`))
	require.Error(t, err, "a boolean")
}
