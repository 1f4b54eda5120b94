package openai_test

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/openai"
	"github.com/ai-job-gateway/gateway/providers/providertest"
)

// bundle is what setup gives each test.
type bundle struct {
	t        *testing.T
	adapter  *openai.Adapter
	provider *providers.Provider
	vendor   *providertest.Vendor
	reports  []int
}

// setup starts a fake OpenAI server whose answers the test sets with
// b.handle, and an adapter for it using the key "sk-test".
func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{t: t, vendor: providertest.NewVendor(t, nil)}
	b.provider = &providers.Provider{
		ID: "oa", Name: "OpenAI test", Adapter: "openai",
		Settings: map[string]any{"base_url": b.vendor.URL + "/v1/", "api_key_env": "TEST_OPENAI_KEY", "model": "gpt-test"},
		Services: map[jobs.ServiceID]*providers.Capability{
			jobs.LLMTasks:       {Pricing: providers.Pricing{Unit: providers.PerToken, Amount: 0.001, Currency: "USD"}},
			jobs.Translations:   {Pricing: providers.Pricing{Unit: providers.PerCharacter, Amount: 0.01, Currency: "USD"}},
			jobs.Transcriptions: {Limits: providers.Limits{MaxFileSizeMB: 1}, Pricing: providers.Pricing{Unit: providers.PerMinute, Amount: 0.006, Currency: "USD"}},
		},
	}
	a, err := openai.New(b.provider, providers.WithHTTPClient(b.vendor.Client()), providertest.Env("TEST_OPENAI_KEY", "sk-test"))
	require.NoError(t, err)
	b.adapter = a
	return b
}

func (b *bundle) handle(h http.HandlerFunc) { b.vendor.Handle(h) }

func (b *bundle) run(ctx context.Context, svc jobs.ServiceID, input, options string) (map[string]any, error) {
	call := providertest.Call(b.provider, svc, input, options)
	call.JobID = "job-1"
	res, progress, err := providertest.Run[map[string]any](ctx, b.t, b.adapter, call)
	b.reports = append(b.reports, progress...)
	return res, err
}

// chatAnswer replies with one choice and token usage.
func chatAnswer(content, finish string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id":      "chatcmpl-1",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}
}

type chatBody struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Temperature *float64 `json:"temperature"`
}

// chatRequest is the chat request the fake server received, decoded
// and raw.
type chatRequest struct {
	body chatBody
	raw  map[string]any
}

// chat makes the server check and record the chat request, then answer
// with one choice of content and finish.
func (b *bundle) chat(t *testing.T, content, finish string) *chatRequest {
	got := &chatRequest{}
	answer := chatAnswer(content, finish)
	b.handle(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, http.MethodPost, r.Method)
		assert.Equal(t, "/v1/chat/completions", r.URL.Path)
		assert.Equal(t, "Bearer sk-test", r.Header.Get("Authorization"))
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
		data, err := io.ReadAll(r.Body)
		assert.NoError(t, err)
		assert.NoError(t, json.Unmarshal(data, &got.body))
		assert.NoError(t, json.Unmarshal(data, &got.raw))
		answer(w, r)
	})
	return got
}

func TestLLMTask(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, input, options string
		answerFinish         string
		wantModel            string
		wantMessages         [][2]string
		wantTemperature      *float64
		check                func(t *testing.T, res map[string]any)
	}{
		{
			name:         "system prompt, text, no creativity",
			input:        `{"type":"text","text":"The quick brown fox.","prompt":"Summarise this.","system_prompt":"You are terse."}`,
			answerFinish: "stop", wantModel: "gpt-test",
			wantMessages: [][2]string{{"system", "You are terse."}, {"user", "Summarise this.\n\nThe quick brown fox."}},
			check: func(t *testing.T, res map[string]any) {
				require.Equal(t, map[string]any{"content": "answer", "finish_reason": "completed",
					"usage": map[string]any{"input_tokens": 10.0, "output_tokens": 5.0, "cost": 0.015}}, res,
					"usage always: the gateway shows it only when asked for")
			},
		},
		{
			name: "precise sends temperature 0", input: `{"type":"text","prompt":"Hi"}`, options: `{"creativity":"precise"}`,
			answerFinish: "stop", wantModel: "gpt-test", wantMessages: [][2]string{{"user", "Hi"}}, wantTemperature: ptr(0.0),
		},
		{
			name: "balanced, model override, usage", input: `{"type":"text","prompt":"Hi"}`, options: `{"creativity":"balanced","model":"gpt-big","include_usage":true}`,
			answerFinish: "stop", wantModel: "gpt-big", wantMessages: [][2]string{{"user", "Hi"}}, wantTemperature: ptr(0.7),
			check: func(t *testing.T, res map[string]any) {
				require.Equal(t, map[string]any{"input_tokens": 10.0, "output_tokens": 5.0, "cost": 0.015}, res["usage"])
			},
		},
		{
			name: "creative, cut short", input: `{"type":"text","prompt":"Hi"}`, options: `{"creativity":"creative"}`,
			answerFinish: "length", wantModel: "gpt-test", wantMessages: [][2]string{{"user", "Hi"}}, wantTemperature: ptr(1.2),
			check: func(t *testing.T, res map[string]any) {
				require.Equal(t, "max_tokens", res["finish_reason"])
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			seen := b.chat(t, "answer", tt.answerFinish)

			res, err := b.run(context.Background(), jobs.LLMTasks, tt.input, tt.options)
			require.NoError(t, err)
			require.Equal(t, tt.wantModel, seen.body.Model)
			msgs := make([][2]string, len(seen.body.Messages))
			for i, m := range seen.body.Messages {
				msgs[i] = [2]string{m.Role, m.Content}
			}
			require.Equal(t, tt.wantMessages, msgs)
			if tt.wantTemperature == nil {
				require.NotContains(t, seen.raw, "temperature")
			} else {
				require.Contains(t, seen.raw, "temperature", "a temperature of 0 is sent, not omitted")
				require.InDelta(t, *tt.wantTemperature, *seen.body.Temperature, 1e-9)
			}
			require.Equal(t, []int{0, 100}, b.reports)
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestLLMTaskDocumentIsUnsupported(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.run(context.Background(), jobs.LLMTasks, `{"type":"document","url":"https://example.com/a.pdf","prompt":"p"}`, ``)
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Code: jobs.CodeUnsupportedInput})
	require.Zero(t, b.vendor.Requests())
}

func TestTranslate(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, options string
		wantSystem    []string
		notSystem     []string
		wantSource    string
	}{
		{"auto source", `{"source_language":"auto"}`, []string{"into German (de)", "translation only"}, []string{"from", "register"}, "und"},
		{"given source, formal, usage", `{"source_language":"en","formality":"formal","include_usage":true}`,
			[]string{"from English (en) into German (de)", "formal register"}, nil, "en"},
		{"informal", `{"formality":"informal"}`, []string{"informal register"}, nil, "und"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			seen := b.chat(t, "Hallo Wélt", "stop")

			res, err := b.run(context.Background(), jobs.Translations, `{"type":"text","content":"Hello wörld","target_language":"de"}`, tt.options)
			require.NoError(t, err)
			require.Len(t, seen.body.Messages, 2)
			require.Equal(t, "system", seen.body.Messages[0].Role)
			for _, w := range tt.wantSystem {
				require.Contains(t, seen.body.Messages[0].Content, w)
			}
			for _, w := range tt.notSystem {
				require.NotContains(t, seen.body.Messages[0].Content, w)
			}
			require.Equal(t, "user", seen.body.Messages[1].Role)
			require.Equal(t, "Hello wörld", seen.body.Messages[1].Content)
			require.Equal(t, "gpt-test", seen.body.Model)

			require.Equal(t, "Hallo Wélt", res["content"])
			require.Equal(t, tt.wantSource, res["source_language"])
			require.Equal(t, "de", res["target_language"])
			require.Equal(t, 11.0, res["character_count"])
			if strings.Contains(tt.options, "include_usage") {
				require.Equal(t, map[string]any{"input_tokens": 10.0, "output_tokens": 5.0, "cost": 0.11}, res["usage"], "per_character pricing")
			} else {
				require.NotContains(t, res, "usage")
			}
		})
	}
}

func TestTranslateDocumentIsUnsupported(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.run(context.Background(), jobs.Translations, `{"type":"document","url":"https://example.com/a.pdf","target_language":"de"}`, ``)
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Code: jobs.CodeUnsupportedInput})
	require.Zero(t, b.vendor.Requests())
}

var audio = []byte("ID3\x04fake mp3 bytes")

// transcriptionServer serves audio at /media/talk.mp3 and answers
// /v1/audio/transcriptions after checking the multipart request.
func transcriptionServer(t *testing.T, b *bundle, wantLanguage string) {
	b.handle(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/media/talk.mp3":
			assert.Equal(t, http.MethodGet, r.Method)
			assert.Empty(t, r.Header.Get("Authorization"), "the API key is not sent to the media host")
			_, _ = w.Write(audio)
		case "/media/missing.mp3":
			http.NotFound(w, r)
		case "/media/big.wav":
			_, _ = w.Write(make([]byte, 1<<20+1))
		case "/v1/audio/transcriptions":
			assert.Equal(t, http.MethodPost, r.Method)
			assert.Equal(t, "Bearer sk-test", r.Header.Get("Authorization"))
			if !assert.NoError(t, r.ParseMultipartForm(10<<20)) {
				return
			}
			assert.Equal(t, "gpt-test", r.FormValue("model"))
			assert.Equal(t, "verbose_json", r.FormValue("response_format"))
			assert.Equal(t, wantLanguage, r.FormValue("language"))
			granularities := r.MultipartForm.Value["timestamp_granularities[]"]
			words := ""
			if granularities != nil {
				assert.Equal(t, []string{"segment", "word"}, granularities, "words, and segments still")
				// As the API does: words only when asked for.
				words = `,"words":[{"word":"Hello","start":0,"end":0.6},{"word":"there.","start":0.6,"end":1.52},
					{"word":"General","start":1.52,"end":2.1},{"word":"Kenobi.","start":2.1,"end":3.3}]`
			}
			f, hdr, err := r.FormFile("file")
			if !assert.NoError(t, err) {
				return
			}
			assert.Equal(t, "talk.mp3", hdr.Filename)
			data, err := io.ReadAll(f)
			assert.NoError(t, err)
			assert.Equal(t, audio, data)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"task":"transcribe","language":"english","duration":120,"text":" Hello there. General Kenobi.",
				"segments":[{"id":0,"start":0,"end":1.5,"text":" Hello there.","avg_logprob":-0.1},
				            {"id":1,"start":1.5,"end":3.2,"text":" General Kenobi.","avg_logprob":-0.3}]`+words+`}`)
		default:
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
		}
	})
}

func TestTranscribe(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, options, wantLanguage string
		check                       func(t *testing.T, res map[string]any)
	}{
		{"defaults", ``, "", func(t *testing.T, res map[string]any) {
			require.Equal(t, "json", res["format"])
			require.Equal(t, "en", res["language"], "Whisper's language name becomes a code")
			require.Equal(t, 120.0, res["duration"])
			segs := res["segments"].([]any)
			require.Len(t, segs, 2)
			first := segs[0].(map[string]any)
			require.Equal(t, "Hello there.", first["text"])
			require.Equal(t, 1.5, first["end"])
			require.InDelta(t, math.Exp(-0.1), first["confidence"], 0.001)
			require.Equal(t, []any{
				map[string]any{"start": 0.0, "end": 0.6, "text": "Hello"},
				map[string]any{"start": 0.6, "end": 1.5, "text": "there."},
			}, first["words"], "each word in its segment, kept within it, no confidence")
			require.Equal(t, []any{
				map[string]any{"start": 1.52, "end": 2.1, "text": "General"},
				map[string]any{"start": 2.1, "end": 3.2, "text": "Kenobi."},
			}, segs[1].(map[string]any)["words"])
			require.NotContains(t, res, "usage")
		}},
		{"language, vtt, no timestamps, usage", `{"language":"pt-BR","format":"vtt","timestamps":false,"include_usage":true}`, "pt", func(t *testing.T, res map[string]any) {
			require.Equal(t, "vtt", res["format"])
			require.Equal(t, "pt-BR", res["language"])
			require.NotContains(t, res, "segments")
			require.Equal(t, map[string]any{"cost": 0.012}, res["usage"], "two minutes at per_minute pricing")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			transcriptionServer(t, b, tt.wantLanguage)
			res, err := b.run(context.Background(), jobs.Transcriptions, `{"type":"audio","url":"`+b.vendor.URL+`/media/talk.mp3"}`, tt.options)
			require.NoError(t, err)
			tt.check(t, res)
			require.Equal(t, []int{0, 100}, b.reports)
		})
	}
}

// A transcription into English posts the audio to /v1/audio/translations,
// which takes neither language nor timestamp granularities.
func TestTranscribeIntoEnglish(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var translations atomic.Int32
	b.handle(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/media/talk.mp3":
			_, _ = w.Write(audio)
		case "/v1/audio/translations":
			translations.Add(1)
			assert.Equal(t, http.MethodPost, r.Method)
			assert.Equal(t, "Bearer sk-test", r.Header.Get("Authorization"))
			if !assert.NoError(t, r.ParseMultipartForm(10<<20)) {
				return
			}
			assert.Equal(t, []string{"gpt-test"}, r.MultipartForm.Value["model"])
			assert.Equal(t, []string{"verbose_json"}, r.MultipartForm.Value["response_format"])
			assert.NotContains(t, r.MultipartForm.Value, "language")
			assert.NotContains(t, r.MultipartForm.Value, "timestamp_granularities[]")
			f, hdr, err := r.FormFile("file")
			if !assert.NoError(t, err) {
				return
			}
			assert.Equal(t, "talk.mp3", hdr.Filename)
			data, _ := io.ReadAll(f)
			assert.Equal(t, audio, data)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"task":"translate","language":"english","duration":3.2,"text":"Good morning. How are you?",
				"segments":[{"id":0,"start":0,"end":1.4,"text":" Good morning.","avg_logprob":-0.2},
				            {"id":1,"start":1.4,"end":3.2,"text":" How are you?","avg_logprob":-0.1}]}`)
		default:
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
		}
	})
	res, err := b.run(context.Background(), jobs.Transcriptions, `{"type":"audio","url":"`+b.vendor.URL+`/media/talk.mp3"}`,
		`{"translate_to_english":true,"language":"de"}`)
	require.NoError(t, err)
	require.Equal(t, "en", res["language"], "the transcript's language, not the spoken one")
	require.Equal(t, 3.2, res["duration"])
	segs := res["segments"].([]any)
	require.Len(t, segs, 2)
	require.Equal(t, "Good morning.", segs[0].(map[string]any)["text"])
	require.NotContains(t, segs[0], "words")
	require.Equal(t, int32(1), translations.Load())
}

func TestTranscribeFailures(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, path, options string
		kind                providers.ErrorKind
		code                string
		status              int
	}{
		{"media 404", "/media/missing.mp3", ``, providers.KindInput, jobs.CodeMediaUnavailable, 404},
		{"media over the capability limit", "/media/big.wav", ``, providers.KindPermanent, jobs.CodeFileTooLarge, 0},
		{"diarization", "/media/talk.mp3", `{"diarization":true}`, providers.KindPermanent, jobs.CodeUnsupportedOption, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			transcriptionServer(t, b, "")
			_, err := b.run(context.Background(), jobs.Transcriptions, `{"type":"audio","url":"`+b.vendor.URL+tt.path+`"}`, tt.options)
			providertest.RequireError(t, err, providertest.Failure{Kind: tt.kind, Code: tt.code, Status: tt.status})
		})
	}
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		status int
		body   string
		kind   providers.ErrorKind
		code   string
		msg    string
	}{
		{"rate limited", 429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, providers.KindRetryable, jobs.CodeProviderUnavailable, "Rate limit reached"},
		{"quota exhausted", 429, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, providers.KindPermanent, jobs.CodeProviderRejected, "quota"},
		{"server error", 500, `{"error":{"message":"The server had an error"}}`, providers.KindRetryable, jobs.CodeProviderUnavailable, "server had an error"},
		{"overloaded", 503, `upstream overloaded`, providers.KindRetryable, jobs.CodeProviderUnavailable, "upstream overloaded"},
		{"bad key", 401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, providers.KindPermanent, jobs.CodeProviderRejected, "Incorrect API key"},
		{"forbidden", 403, `{"error":{"message":"Country not supported"}}`, providers.KindPermanent, jobs.CodeProviderRejected, "Country not supported"},
		{"bad request", 400, `{"error":{"message":"context too long"}}`, providers.KindPermanent, jobs.CodeProviderRejected, "context too long"},
		{"unknown model", 404, `{"error":{"message":"model not found"}}`, providers.KindPermanent, jobs.CodeProviderRejected, "model not found"},
		{"unprocessable", 422, `{"detail":"bad"}`, providers.KindPermanent, jobs.CodeProviderRejected, `{"detail":"bad"}`},
		{"garbage 200", 200, `not json`, providers.KindPermanent, jobs.CodeBadResponse, "not a valid OpenAI API response"},
		{"no choices", 200, `{"choices":[]}`, providers.KindPermanent, jobs.CodeBadResponse, "no choices"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.vendor.Answer(tt.status, tt.body)
			_, err := b.run(context.Background(), jobs.LLMTasks, `{"type":"text","prompt":"Hi"}`, ``)
			status := tt.status
			if status == 200 {
				status = 0
			}
			providertest.RequireError(t, err, providertest.Failure{Kind: tt.kind, Code: tt.code, Status: status})
			require.ErrorContains(t, err, tt.msg)
			require.ErrorContains(t, err, `"oa"`, "the message names the provider")
		})
	}
}

func TestNetworkErrorIsRetryable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.vendor.Close()
	_, err := b.run(context.Background(), jobs.LLMTasks, `{"type":"text","prompt":"Hi"}`, ``)
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindRetryable, Code: jobs.CodeProviderUnavailable})
}

// stalled is a bundle whose server answers nothing until the test ends.
func stalled(t *testing.T) *bundle {
	t.Helper()
	b := setup(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	b.handle(func(http.ResponseWriter, *http.Request) { <-release })
	return b
}

func TestClientTimeoutIsRetryable(t *testing.T) {
	t.Parallel()
	b := stalled(t)

	client := b.vendor.Client()
	client.Timeout = 50 * time.Millisecond
	a, err := openai.New(b.provider, providers.WithHTTPClient(client), providertest.Env("TEST_OPENAI_KEY", "k"))
	require.NoError(t, err)
	_, err = a.Run(context.Background(), providers.Call{Service: jobs.LLMTasks, Provider: b.provider, Input: json.RawMessage(`{"type":"text","prompt":"Hi"}`)})
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindRetryable, Code: jobs.CodeProviderUnavailable})
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	b := stalled(t)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := b.run(ctx, jobs.LLMTasks, `{"type":"text","prompt":"Hi"}`, ``)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestNewValidatesSettings(t *testing.T) {
	t.Parallel()

	noEnv := providertest.NoEnv()
	tests := []struct {
		name     string
		settings map[string]any
		want     []string
	}{
		{"missing everything", nil, []string{"base_url is missing", "model is missing"}},
		{"relative base_url", map[string]any{"base_url": "api.openai.com/v1", "model": "m"}, []string{`base_url "api.openai.com/v1" is not an absolute http or https URL`}},
		{"unset key variable", map[string]any{"base_url": "https://api.openai.com/v1", "model": "m", "api_key_env": "OPENAI_API_KEY"},
			[]string{"api_key_env names OPENAI_API_KEY, but that environment variable is not set"}},
		{"unknown key", map[string]any{"base_url": "https://x", "model": "m", "api_key": "sk-..."}, []string{`unknown key(s) "api_key"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := openai.New(&providers.Provider{ID: "x", Settings: tt.settings}, noEnv)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
		})
	}

	_, err := openai.New(&providers.Provider{ID: "x", Settings: map[string]any{"base_url": "http://localhost:11434/v1", "model": "llama3"}}, noEnv)
	require.NoError(t, err, "a server without authentication needs no api_key_env")
}

func TestTranscribeSendsTheExtractedAudio(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wav := append([]byte("RIFF"), make([]byte, 60)...)
	path := filepath.Join(t.TempDir(), "audio.wav")
	require.NoError(t, os.WriteFile(path, wav, 0o600))
	b.handle(func(w http.ResponseWriter, r *http.Request) {
		if !assert.Equal(t, "/v1/audio/transcriptions", r.URL.Path, "the media host is not asked again") {
			return
		}
		f, hdr, err := r.FormFile("file")
		if !assert.NoError(t, err) {
			return
		}
		assert.Equal(t, "audio.wav", hdr.Filename)
		data, _ := io.ReadAll(f)
		assert.Equal(t, wav, data)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"language":"english","duration":2,"text":"Hi.","segments":[{"start":0,"end":2,"text":"Hi."}]}`)
	})
	media := &providers.Media{Path: path, ContentType: "audio/wav", Size: int64(len(wav)), Duration: 2}
	out, err := b.adapter.Run(context.Background(), providers.Call{
		JobID: "job-1", Service: jobs.Transcriptions, Provider: b.provider,
		Input: json.RawMessage(`{"type":"video","url":"` + b.vendor.URL + `/media/talk.mp4"}`), Media: media,
	})
	require.NoError(t, err)
	require.Contains(t, string(out), `"Hi."`)

	media.Size = 1<<20 + 1 // over the test capability's 1 MB
	_, err = b.adapter.Run(context.Background(), providers.Call{
		JobID: "job-1", Service: jobs.Transcriptions, Provider: b.provider,
		Input: json.RawMessage(`{"type":"video","url":"` + b.vendor.URL + `/media/talk.mp4"}`), Media: media,
	})
	providertest.RequireError(t, err, providertest.Failure{Kind: providers.KindPermanent, Code: jobs.CodeFileTooLarge})
}
