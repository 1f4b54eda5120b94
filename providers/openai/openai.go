// Package openai is the "openai" adapter: it calls any server that speaks
// the OpenAI HTTP API (OpenAI itself, vLLM, llama.cpp, Ollama, LocalAI, ...).
//
// llm-tasks and translations use POST {base_url}/chat/completions;
// transcriptions use POST {base_url}/audio/transcriptions; video-analyses
// send frames of the video to a vision model through chat completions
// (vision.go). The user message of an llm-task is the prompt, then,
// when the input has text, a blank line and the text:
//
//	{prompt}
//
//	{text}
//
// preceded by input.system_prompt as a system message when one is given.
package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/internal/settings"
)

// Settings are the openai adapter's provider settings.
type Settings struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1.
	BaseURL string `json:"base_url"`
	// APIKeyEnv names the environment variable holding the API key; empty
	// for servers without authentication.
	APIKeyEnv string `json:"api_key_env"`
	// Model is the model used when a job does not pin one.
	Model string `json:"model"`
}

// Adapter calls one OpenAI-compatible server.
type Adapter struct {
	provider *providers.Provider
	baseURL  string
	apiKey   string
	model    string
	client   *http.Client
	// media fetches the job's media; it defaults to client.
	media *http.Client
}

// New builds the openai adapter of p, validating p.Settings and reading the
// API key from the environment (see providers.Option). The media client,
// when given, fetches the job's media, so the provider's API may sit on a
// private network while media may not; otherwise the HTTP client does.
func New(p *providers.Provider, opts ...providers.Option) (*Adapter, error) {
	o := providers.NewOptions(opts...)
	var s Settings
	if err := settings.Decode(p.Settings, &s); err != nil {
		return nil, err
	}
	var errs []error
	baseURL, err := settings.BaseURL(s.BaseURL, "https://api.openai.com/v1")
	if err != nil {
		errs = append(errs, err)
	}
	if strings.TrimSpace(s.Model) == "" {
		errs = append(errs, errors.New("settings: model is missing; set the model used when a job does not pin one"))
	}
	var key string
	if s.APIKeyEnv != "" {
		v, ok := o.LookupEnv(s.APIKeyEnv)
		if !ok || v == "" {
			errs = append(errs, fmt.Errorf("settings: api_key_env names %s, but that environment variable is not set; export it, or remove api_key_env for a server without authentication", s.APIKeyEnv))
		}
		key = v
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	client := o.Client(10 * time.Minute)
	return &Adapter{
		provider: p,
		baseURL:  baseURL,
		apiKey:   key,
		model:    s.Model,
		client:   client,
		media:    cmp.Or(o.MediaClient, client),
	}, nil
}

// Services are the four services: Run dispatches on call.Service.
func (a *Adapter) Services() []jobs.ServiceID {
	return []jobs.ServiceID{jobs.LLMTasks, jobs.Translations, jobs.Transcriptions, jobs.VideoAnalyses}
}

// VendorRetention is PurgeNoAPI: OpenAI keeps requests in its abuse
// monitoring logs for up to 30 days, with no API to delete them; another
// OpenAI-compatible server may keep nothing, but the adapter cannot tell
// (docs/providers.md, Deleting a job's vendor copy).
func (a *Adapter) VendorRetention() providers.PurgeOutcome { return providers.PurgeNoAPI }

// Run calls the provider for the job; it cannot resume, so every attempt
// starts over and reports 0 first.
func (a *Adapter) Run(ctx context.Context, call providers.Call) (json.RawMessage, error) {
	call.Progress(0)
	var (
		res any
		err error
	)
	switch call.Service {
	case jobs.LLMTasks:
		res, err = a.llmTask(ctx, call)
	case jobs.Translations:
		res, err = a.translate(ctx, call)
	case jobs.Transcriptions:
		res, err = a.transcribe(ctx, call)
	case jobs.VideoAnalyses:
		res, err = a.analyseVideo(ctx, call)
	default: // the registry refuses what Services does not list
		err = providers.Permanent(jobs.CodeUnsupportedService, fmt.Sprintf("openai serves no %s", call.Service), nil)
	}
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("openai: encode result: %w", err)
	}
	call.Progress(100)
	return out, nil
}

// send performs req against the provider and returns the body of a 2xx
// answer; anything else is classified.
func (a *Adapter) send(ctx context.Context, req *http.Request) ([]byte, error) {
	if a.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+a.apiKey)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, providers.Retryable(jobs.CodeProviderUnavailable,
			fmt.Sprintf("provider %q could not be reached", a.provider.ID), err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, providers.Retryable(jobs.CodeProviderUnavailable,
			fmt.Sprintf("provider %q: reading the answer failed", a.provider.ID), err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return body, nil
	}
	return nil, a.statusError(resp.StatusCode, body)
}

// apiError is the error body of the OpenAI API.
type apiError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	} `json:"error"`
}

// statusError classifies a non-2xx answer the way OpenAI's own SDKs retry:
// 408, 409, 429 and 5xx are retryable, except a 429 for an exhausted quota;
// other 4xx are permanent for this provider.
func (a *Adapter) statusError(status int, body []byte) *providers.Error {
	var ae apiError
	msg := ""
	if json.Unmarshal(body, &ae) == nil && ae.Error.Message != "" {
		msg = ae.Error.Message
	} else {
		msg = strings.TrimSpace(string(body))
	}
	if r := []rune(msg); len(r) > 300 {
		msg = string(r[:300]) + "…"
	}
	text := fmt.Sprintf("provider %q answered %d %s", a.provider.ID, status, http.StatusText(status))
	if msg != "" {
		text += ": " + msg
	}
	var e *providers.Error
	quota := ae.Error.Code == "insufficient_quota" || ae.Error.Type == "insufficient_quota"
	switch {
	case status == http.StatusTooManyRequests && quota:
		e = providers.Permanent(jobs.CodeProviderRejected, text, nil)
	case status == http.StatusRequestTimeout, status == http.StatusConflict,
		status == http.StatusTooManyRequests, status >= 500:
		e = providers.Retryable(jobs.CodeProviderUnavailable, text, nil)
	default:
		e = providers.Permanent(jobs.CodeProviderRejected, text, nil)
	}
	e.StatusCode = status
	return e
}

// badResponse reports a 2xx answer that could not be understood.
func (a *Adapter) badResponse(err error) *providers.Error {
	return providers.Permanent(jobs.CodeBadResponse,
		fmt.Sprintf("provider %q sent an answer that is not a valid OpenAI API response", a.provider.ID), err)
}

// newJSONRequest builds a POST of v to {base_url}/{path}.
func (a *Adapter) newJSONRequest(ctx context.Context, path string, v any) (*http.Request, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("openai: encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.baseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("openai: build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	return req, nil
}
