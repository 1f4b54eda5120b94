package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/blobstore"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// sampleAudio stands for an uploaded audio file; the gateway stores it
// without reading it.
var sampleAudio = []byte("ID3\x04\x00 not really an mp3, but the bytes the job must fetch")

// sampleTranscript is a transcription job's result with two segments, the
// second with its words.
var sampleTranscript = jobs.TranscriptionResult{Format: "json", Duration: 4.5, Language: "en", Text: "Hello there. General Kenobi.",
	Segments: []jobs.Segment{
		{Start: 0, End: 1.5, Text: "Hello there."},
		{Start: 2, End: 4.5, Text: "General Kenobi.", Words: []jobs.Word{{Start: 2, End: 3, Text: "General"}, {Start: 3.1, End: 4.5, Text: "Kenobi."}}},
	}}

// setupAudio is setupWaiting with a directory blob store whose links a
// file server of its own serves, as gateway dev serves them.
func setupAudio(t *testing.T) (*bundle, *blobstore.Store) {
	t.Helper()
	files := openTestFiles(t)
	return setupWaiting(t, func(cfg *api.Config) { cfg.Files = files }), files
}

// openTestFiles is a directory blob store whose links a file server of
// its own, on loopback, serves.
func openTestFiles(t *testing.T) *blobstore.Store {
	t.Helper()
	var files *blobstore.Store
	fileServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { files.Handler().ServeHTTP(w, r) }))
	t.Cleanup(fileServer.Close)
	files, err := blobstore.Open(context.Background(), blobstore.Config{Dir: t.TempDir(), SigningKey: []byte("a signing key of the test store"), BaseURL: fileServer.URL})
	require.NoError(t, err)
	t.Cleanup(func() { _ = files.Close() })
	return files
}

// answerFirstTranscription records the first job started, once started,
// as its workflow would on finishing with result, and hands it on job.
func (b *bundle) answerFirstTranscription(t *testing.T, result jobs.TranscriptionResult) <-chan jobs.Submission {
	started := make(chan jobs.Submission, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	t.Cleanup(wg.Wait)
	go func() {
		defer wg.Done()
		var start *jobs.Submission
		for deadline := time.Now().Add(10 * time.Second); start == nil && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			b.mu.Lock()
			if len(b.starts) > 0 {
				start = &b.starts[0].Input
			}
			b.mu.Unlock()
		}
		if !assert.NotNil(t, start, "no job started") {
			close(started)
			return
		}
		started <- *start
		ctx := context.Background()
		job, err := b.store.Jobs.GetJob(ctx, start.JobID)
		if !assert.NoError(t, err) {
			return
		}
		resultJSON, _ := json.Marshal(result)
		completed := time.Now()
		job.Status, job.Provider, job.ProcessedAt, job.CompletedAt = jobs.StatusCompleted, "alpha", &completed, &completed
		job.Result, job.Revision = string(resultJSON), job.Revision+1
		assert.NoError(t, b.store.Jobs.SaveJob(ctx, job))
	}()
	return started
}

func TestOpenAITranscriptionJSON(t *testing.T) {
	t.Parallel()
	b, files := setupAudio(t)
	started := b.answerFirstTranscription(t, sampleTranscript)
	client := b.openAIClient(b.token(t, "transcriptions:write"))
	var resp *http.Response
	answer, err := client.Audio.Transcriptions.New(context.Background(), openai.AudioTranscriptionNewParams{
		File:     openai.File(bytes.NewReader(sampleAudio), "talk.mp3", "audio/mpeg"),
		Model:    "whisper-1",
		Language: openai.String("en"),
		Prompt:   openai.String("ignored"),
	}, option.WithResponseInto(&resp))
	require.NoError(t, err)
	require.Equal(t, "Hello there. General Kenobi.", answer.Text)
	require.JSONEq(t, `{"text": "Hello there. General Kenobi."}`, answer.RawJSON())

	start := <-started
	require.Equal(t, start.JobID, resp.Header.Get(api.JobIDHeader))
	require.Equal(t, jobs.Transcriptions, start.Service)
	require.Equal(t, "acme", start.Tenant)
	require.Empty(t, start.Provider, "whisper-1 leaves the choice to routing")
	require.JSONEq(t, `{"language": "en", "timestamps": false}`, string(start.Options))

	// The job's input is a signed link to the upload, kept among the job's
	// files (results/<job id>/), which its deletion and retention remove.
	var input jobs.TranscriptionInput
	require.NoError(t, json.Unmarshal(start.Input, &input))
	require.Equal(t, "audio", input.Type)
	require.Contains(t, input.URL, blobstore.FilesPath+"results/"+start.JobID+"/upload.mp3?")
	fetched, err := http.Get(input.URL)
	require.NoError(t, err)
	defer func() { _ = fetched.Body.Close() }()
	require.Equal(t, http.StatusOK, fetched.StatusCode)
	body, err := io.ReadAll(fetched.Body)
	require.NoError(t, err)
	require.Equal(t, sampleAudio, body)
	n, err := files.DeletePrefix(context.Background(), "results/"+start.JobID+"/")
	require.NoError(t, err)
	require.Equal(t, 1, n, "the upload is the job's only file")
}

// A repeat under the same Idempotency-Key answers with the first job, and
// keeps no second upload.
func TestOpenAITranscriptionIdempotencyKey(t *testing.T) {
	t.Parallel()
	b, files := setupAudio(t)
	started := b.answerFirstTranscription(t, sampleTranscript)
	client := b.openAIClient(b.token(t, "transcriptions:write"))
	ids := make([]string, 2)
	for i := range ids {
		var resp *http.Response
		answer, err := client.Audio.Transcriptions.New(context.Background(), openai.AudioTranscriptionNewParams{
			File: openai.File(bytes.NewReader(sampleAudio), "talk.mp3", "audio/mpeg"), Model: "whisper-1",
		}, option.WithHeader("Idempotency-Key", "talk-1"), option.WithResponseInto(&resp))
		require.NoError(t, err)
		require.Equal(t, "Hello there. General Kenobi.", answer.Text)
		ids[i] = resp.Header.Get(api.JobIDHeader)
	}
	require.Equal(t, (<-started).JobID, ids[0])
	require.Equal(t, ids[0], ids[1])
	n, err := files.DeletePrefix(context.Background(), "results/")
	require.NoError(t, err)
	require.Equal(t, 1, n, "the repeat's upload is removed")
}

func TestOpenAITranscriptionSRT(t *testing.T) {
	t.Parallel()
	b, _ := setupAudio(t)
	started := b.answerFirstTranscription(t, sampleTranscript)
	client := b.openAIClient(b.token(t, "transcriptions:write"))
	var resp *http.Response
	_, err := client.Audio.Transcriptions.New(context.Background(), openai.AudioTranscriptionNewParams{
		File:           openai.File(bytes.NewReader(sampleAudio), "talk.wav", "audio/wav"),
		Model:          "narrow",
		ResponseFormat: openai.AudioResponseFormatSRT,
	}, option.WithResponseBodyInto(&resp))
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "1\n00:00:00,000 --> 00:00:01,500\nHello there.\n\n2\n00:00:02,000 --> 00:00:04,500\nGeneral Kenobi.\n\n", string(body))
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain"))

	start := <-started
	require.Equal(t, "narrow", start.Provider, "a provider's id as the model names the job's provider")
	require.JSONEq(t, `{"format": "srt", "timestamps": true}`, string(start.Options))
}

func TestOpenAITranscriptionVerboseJSON(t *testing.T) {
	t.Parallel()
	b, _ := setupAudio(t)
	b.answerFirstTranscription(t, sampleTranscript)
	client := b.openAIClient(b.token(t, "transcriptions:write"))
	answer, err := client.Audio.Transcriptions.New(context.Background(), openai.AudioTranscriptionNewParams{
		File:                   openai.File(bytes.NewReader(sampleAudio), "talk.mp3", "audio/mpeg"),
		Model:                  "auto",
		ResponseFormat:         openai.AudioResponseFormatVerboseJSON,
		TimestampGranularities: []string{"word", "segment"},
	})
	require.NoError(t, err)
	require.JSONEq(t, `{"task": "transcribe", "language": "en", "duration": 4.5, "text": "Hello there. General Kenobi.",
		"segments": [{"id": 0, "start": 0, "end": 1.5, "text": "Hello there."}, {"id": 1, "start": 2, "end": 4.5, "text": "General Kenobi."}],
		"words": [{"word": "General", "start": 2, "end": 3}, {"word": "Kenobi.", "start": 3.1, "end": 4.5}]}`, answer.RawJSON())
}

func TestOpenAITranscriptionRefusals(t *testing.T) {
	t.Parallel()
	b, files := setupAudio(t)
	client := b.openAIClient(b.token(t, "transcriptions:write"))
	ctx := context.Background()
	cases := []struct {
		name   string
		params openai.AudioTranscriptionNewParams
		status int
		param  string
		code   string
	}{
		{"oversized file", openai.AudioTranscriptionNewParams{File: openai.File(bytes.NewReader(make([]byte, api.OpenAIAudioMaxFileBytes+1)), "long.mp3", "audio/mpeg"), Model: "whisper-1"},
			http.StatusRequestEntityTooLarge, "file", "file_too_large"},
		{"bad response_format", openai.AudioTranscriptionNewParams{File: openai.File(bytes.NewReader(sampleAudio), "talk.mp3", "audio/mpeg"), Model: "whisper-1", ResponseFormat: "mp3"},
			http.StatusBadRequest, "response_format", "invalid_value"},
		{"word timestamps outside verbose_json", openai.AudioTranscriptionNewParams{File: openai.File(bytes.NewReader(sampleAudio), "talk.mp3", "audio/mpeg"), Model: "whisper-1", TimestampGranularities: []string{"word"}},
			http.StatusBadRequest, "timestamp_granularities", ""},
		{"unknown model", openai.AudioTranscriptionNewParams{File: openai.File(bytes.NewReader(sampleAudio), "talk.mp3", "audio/mpeg"), Model: "gpt-4o-transcribe"},
			http.StatusBadRequest, "model", "model_not_found"},
		{"provider without transcriptions", openai.AudioTranscriptionNewParams{File: openai.File(bytes.NewReader(sampleAudio), "talk.mp3", "audio/mpeg"), Model: "llm-only"},
			http.StatusBadRequest, "model", "model_not_found"},
	}
	for _, tc := range cases {
		_, err := client.Audio.Transcriptions.New(ctx, tc.params)
		apiErr := openAIErrorOf(t, err)
		require.Equal(t, tc.status, apiErr.StatusCode, tc.name)
		require.Equal(t, tc.param, apiErr.Param, tc.name)
		require.Equal(t, tc.code, apiErr.Code, tc.name)
		require.Equal(t, "invalid_request_error", apiErr.Type, tc.name)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Empty(t, b.starts, "a refused request makes no job")
	n, err := files.DeletePrefix(ctx, "results/")
	require.NoError(t, err)
	require.Zero(t, n, "a refused request stores no file")
}

// A job refused at creation, here for a link to a private address where
// the gateway only calls public ones, answers 400 naming the file, and
// its upload is removed.
func TestOpenAITranscriptionJobRefused(t *testing.T) {
	t.Parallel()
	files := openTestFiles(t)
	b := setupJobOps(t, storetest.SQLite, func(cfg *jobops.Config) { cfg.CheckURLs = true }, func(cfg *api.Config) { cfg.Files = files })
	client := b.openAIClient(b.token(t, "transcriptions:write"))
	_, err := client.Audio.Transcriptions.New(context.Background(), openai.AudioTranscriptionNewParams{
		File: openai.File(bytes.NewReader(sampleAudio), "talk.mp3", "audio/mpeg"), Model: "whisper-1"})
	apiErr := openAIErrorOf(t, err)
	require.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	require.Equal(t, "file", apiErr.Param)
	require.Contains(t, apiErr.Message, "public addresses")
	n, err := files.DeletePrefix(context.Background(), "results/")
	require.NoError(t, err)
	require.Zero(t, n, "the refused job's upload is removed")
}

func TestOpenAITranscriptionWithoutBlobStore(t *testing.T) {
	t.Parallel()
	b := setupWaiting(t)
	client := b.openAIClient(b.token(t, "transcriptions:write"))
	_, err := client.Audio.Transcriptions.New(context.Background(), openai.AudioTranscriptionNewParams{
		File: openai.File(bytes.NewReader(sampleAudio), "talk.mp3", "audio/mpeg"), Model: "whisper-1"})
	apiErr := openAIErrorOf(t, err)
	require.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
	require.Equal(t, "server_error", apiErr.Type)
	require.Equal(t, "uploads_unavailable", apiErr.Code)
}

// A translation is one transcription job with options.translate_to_english,
// answered in the response_format asked for.
func TestOpenAITranslation(t *testing.T) {
	t.Parallel()
	english := jobs.TranscriptionResult{Format: "json", Duration: 4.5, Language: "en", Text: "Good morning. How are you?",
		Segments: []jobs.Segment{{Start: 0, End: 1.5, Text: "Good morning."}, {Start: 2, End: 4.5, Text: "How are you?"}}}
	tests := []struct {
		format  openai.AudioTranslationNewParamsResponseFormat
		options string
		body    string
	}{
		{"", `{"timestamps": false, "translate_to_english": true}`, `{"text": "Good morning. How are you?"}`},
		{openai.AudioTranslationNewParamsResponseFormatText, `{"timestamps": false, "translate_to_english": true}`, "Good morning. How are you?"},
		{openai.AudioTranslationNewParamsResponseFormatSRT, `{"format": "srt", "timestamps": true, "translate_to_english": true}`,
			"1\n00:00:00,000 --> 00:00:01,500\nGood morning.\n\n2\n00:00:02,000 --> 00:00:04,500\nHow are you?\n\n"},
		{openai.AudioTranslationNewParamsResponseFormatVerboseJSON, `{"timestamps": true, "translate_to_english": true}`,
			`{"task": "translate", "language": "english", "duration": 4.5, "text": "Good morning. How are you?",
			"segments": [{"id": 0, "start": 0, "end": 1.5, "text": "Good morning."}, {"id": 1, "start": 2, "end": 4.5, "text": "How are you?"}]}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.format), func(t *testing.T) {
			t.Parallel()
			b, _ := setupAudio(t)
			started := b.answerFirstTranscription(t, english)
			client := b.openAIClient(b.token(t, "transcriptions:write"))
			var resp *http.Response
			//lint:ignore SA1019 the route answers the SDK's call, deprecated or not
			_, err := client.Audio.Translations.New(context.Background(), openai.AudioTranslationNewParams{
				File:           openai.File(bytes.NewReader(sampleAudio), "rede.mp3", "audio/mpeg"),
				Model:          "whisper-1",
				Prompt:         openai.String("ignored"),
				Temperature:    openai.Float(0.2),
				ResponseFormat: tt.format,
			}, option.WithResponseBodyInto(&resp))
			require.NoError(t, err)
			defer func() { _ = resp.Body.Close() }()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			if strings.HasPrefix(tt.body, "{") {
				require.JSONEq(t, tt.body, string(body))
			} else {
				require.Equal(t, tt.body, string(body))
				require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain"))
			}

			start := <-started
			require.Equal(t, start.JobID, resp.Header.Get(api.JobIDHeader))
			require.Equal(t, jobs.Transcriptions, start.Service, "one transcription job")
			require.Equal(t, "acme", start.Tenant)
			require.Empty(t, start.Provider, "whisper-1 leaves the choice to routing")
			require.JSONEq(t, tt.options, string(start.Options))
		})
	}
}

// The official client reads the json answer into its Translation; "auto"
// is a model as for transcriptions.
func TestOpenAITranslationSDKAnswer(t *testing.T) {
	t.Parallel()
	b, _ := setupAudio(t)
	b.answerFirstTranscription(t, sampleTranscript)
	client := b.openAIClient(b.token(t, "transcriptions:write"))
	//lint:ignore SA1019 the route answers the SDK's call, deprecated or not
	answer, err := client.Audio.Translations.New(context.Background(), openai.AudioTranslationNewParams{
		File: openai.File(bytes.NewReader(sampleAudio), "talk.mp3", "audio/mpeg"), Model: "auto"})
	require.NoError(t, err)
	require.Equal(t, "Hello there. General Kenobi.", answer.Text)
}

// A provider whose transcriptions do not translate into English, named as
// the model, is refused in OpenAI's shape, and no job is made.
func TestOpenAITranslationRefusals(t *testing.T) {
	t.Parallel()
	b, files := setupAudio(t)
	client := b.openAIClient(b.token(t, "transcriptions:write"))
	ctx := context.Background()
	cases := []struct {
		name  string
		model string
		code  string
	}{
		{"provider without translates_to_english", "narrow", "unsupported_value"},
		{"provider without transcriptions", "llm-only", "model_not_found"},
		{"unknown model", "gpt-4o-transcribe", "model_not_found"},
	}
	for _, tc := range cases {
		//lint:ignore SA1019 the route answers the SDK's call, deprecated or not
		_, err := client.Audio.Translations.New(ctx, openai.AudioTranslationNewParams{
			File: openai.File(bytes.NewReader(sampleAudio), "talk.mp3", "audio/mpeg"), Model: tc.model})
		apiErr := openAIErrorOf(t, err)
		require.Equal(t, http.StatusBadRequest, apiErr.StatusCode, tc.name)
		require.Equal(t, "invalid_request_error", apiErr.Type, tc.name)
		require.Equal(t, "model", apiErr.Param, tc.name)
		require.Equal(t, tc.code, apiErr.Code, tc.name)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Empty(t, b.starts, "a refused request makes no job")
	n, err := files.DeletePrefix(ctx, "results/")
	require.NoError(t, err)
	require.Zero(t, n, "a refused request stores no file")
}
