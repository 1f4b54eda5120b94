// Package anthropic is the "anthropic" adapter: llm-tasks through the
// Anthropic Messages API, POST {base_url}/messages (docs/providers.md,
// anthropic). The system message is the system prompt; JSON response
// formats become an instruction in it.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/internal/llmtask"
	"github.com/ai-job-gateway/gateway/providers/internal/settings"
	"github.com/ai-job-gateway/gateway/providers/internal/usage"
	"github.com/ai-job-gateway/gateway/providers/internal/vendorhttp"
)

// APIVersion is the anthropic-version header the adapter speaks.
const APIVersion = "2023-06-01"

// Settings are the anthropic adapter's provider settings.
type Settings struct {
	// BaseURL is the API root (default https://api.anthropic.com/v1).
	BaseURL string `json:"base_url"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `json:"api_key_env"`
	// Model is the model used when a job does not pin one.
	Model string `json:"model"`
	// MaxTokens caps the answer (default 1024; the API requires a cap).
	MaxTokens int `json:"max_tokens"`
}

// temperatures maps llm-task creativity to a temperature in Anthropic's
// range, 0 to 1.
var temperatures = map[string]float64{"precise": 0.0, "balanced": 0.7, "creative": 1.0}

// maxTemperature is the top of Anthropic's range: options.temperature,
// 0 to 2, is held to it (docs/providers.md, anthropic).
const maxTemperature = 1.0

// Adapter calls the Anthropic Messages API.
type Adapter struct {
	provider  *providers.Provider
	baseURL   string
	apiKey    string
	model     string
	maxTokens int
	client    *http.Client
}

// New builds the adapter of p, validating its settings and reading the API
// key from the environment (see providers.Option).
func New(p *providers.Provider, opts ...providers.Option) (*Adapter, error) {
	o := providers.NewOptions(opts...)
	s := Settings{BaseURL: "https://api.anthropic.com/v1", MaxTokens: 1024}
	if err := settings.Decode(p.Settings, &s); err != nil {
		return nil, err
	}
	var errs []error
	baseURL, err := settings.BaseURL(s.BaseURL, "https://api.anthropic.com/v1")
	if err != nil {
		errs = append(errs, err)
	}
	if strings.TrimSpace(s.Model) == "" {
		errs = append(errs, errors.New("settings: model is missing; set the model used when a job does not pin one, e.g. claude-sonnet-4-5"))
	}
	if s.MaxTokens < 1 {
		errs = append(errs, fmt.Errorf("settings: max_tokens %d must be at least 1", s.MaxTokens))
	}
	key, err := settings.APIKey(s.APIKeyEnv, "ANTHROPIC_API_KEY", o.LookupEnv)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Adapter{provider: p, baseURL: baseURL, apiKey: key,
		model: s.Model, maxTokens: s.MaxTokens, client: o.Client(10 * time.Minute)}, nil
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type messagesRequest struct {
	Model         string    `json:"model"`
	MaxTokens     int       `json:"max_tokens"`
	System        string    `json:"system,omitempty"`
	Messages      []message `json:"messages"`
	Temperature   *float64  `json:"temperature,omitempty"`
	StopSequences []string  `json:"stop_sequences,omitempty"`
	// Stream is set for a streamed answer only (stream.go).
	Stream bool `json:"stream,omitempty"`
}

type messagesResponse struct {
	Type       string         `json:"type"`
	Content    []contentBlock `json:"content"`
	StopReason string         `json:"stop_reason"`
	Usage      *tokenUsage    `json:"usage"`
}

type contentBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type tokenUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// finishReasons maps Anthropic's stop_reason to the result's
// finish_reason; anything else is completed.
var finishReasons = map[string]string{
	"end_turn":      "completed",
	"stop_sequence": "completed",
	"max_tokens":    "max_tokens",
}

// Services are llm-tasks.
func (a *Adapter) Services() []jobs.ServiceID { return []jobs.ServiceID{jobs.LLMTasks} }

// VendorRetention is PurgeNoAPI: Anthropic keeps API inputs and outputs
// for a while and does not delete them on request (docs/providers.md,
// Deleting a job's vendor copy).
func (a *Adapter) VendorRetention() providers.PurgeOutcome { return providers.PurgeNoAPI }

// Run performs the call; it cannot resume, so every attempt starts over.
func (a *Adapter) Run(ctx context.Context, call providers.Call) (json.RawMessage, error) {
	call.Progress(0)
	var in jobs.LLMTaskInput
	var opts jobs.LLMTaskOptions
	if err := call.Decode(&in, &opts); err != nil {
		return nil, err
	}
	if in.Type == "document" {
		return nil, providers.Permanent(jobs.CodeUnsupportedInput,
			"the anthropic adapter takes llm-task input of type text or messages only; route document tasks to another provider", nil)
	}
	task, err := llmtask.Build(in, opts, call.Capability(), a.model, temperatures)
	if err != nil {
		return nil, err
	}
	req := messagesRequest{Model: task.Model, MaxTokens: a.maxTokens, System: task.System(),
		Temperature: task.Temperature, StopSequences: task.Stop}
	if task.MaxTokens != nil {
		req.MaxTokens = *task.MaxTokens
	}
	if t := task.Temperature; t != nil && *t > maxTemperature {
		clamped := maxTemperature
		req.Temperature = &clamped
	}
	// The Messages API has no response format: the system prompt asks
	// for JSON, and the gateway checks the answer.
	if instruction := llmtask.JSONInstruction(task.ResponseFormat); instruction != "" {
		req.System = llmtask.WithSystem(task.Messages, instruction)[0].Content
	}
	for _, m := range task.Turns() {
		req.Messages = append(req.Messages, message{Role: m.Role, Content: m.Content})
	}

	var resp messagesResponse
	if call.Stream != nil {
		resp, err = a.stream(ctx, req, call.Stream)
	} else {
		resp, err = a.send(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	var text strings.Builder
	for _, block := range resp.Content {
		if block.Type == "text" {
			text.WriteString(block.Text)
		}
	}
	finish, ok := finishReasons[resp.StopReason]
	if !ok {
		if resp.StopReason == "refusal" {
			return nil, providers.Permanent(jobs.CodeProviderRejected,
				fmt.Sprintf("provider %q refused the task (stop_reason refusal)", a.provider.ID), nil)
		}
		finish = "completed"
	}
	res := jobs.LLMTaskResult{Content: text.String(), FinishReason: finish}
	// Always: the gateway bills the tokens and shows result.usage only
	// when the job set include_usage (docs/api.md, Usage and cost).
	res.Usage = a.usage(call.Capability().Pricing, resp, task.Characters())
	out, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("anthropic: encode result: %w", err)
	}
	call.Progress(100)
	return out, nil
}

// usage is the result's usage: the answer's token counts, and the cost
// when the pricing unit can be measured.
func (a *Adapter) usage(p providers.Pricing, resp messagesResponse, characters int) *jobs.Usage {
	in, out := -1, -1
	m := usage.Metered{Characters: characters, Pages: 1}
	if resp.Usage != nil {
		in, out = resp.Usage.InputTokens, resp.Usage.OutputTokens
		m.Tokens = in + out
	}
	return usage.New(in, out, usage.Cost(p, m))
}

// apiError is the Messages API's error body.
type apiError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// send posts the request and decodes a 2xx answer; anything else is
// classified: 429, 529 (overloaded) and 5xx are retryable, other 4xx
// permanent. The API key is never part of an error.
func (a *Adapter) send(ctx context.Context, req messagesRequest) (messagesResponse, error) {
	var out messagesResponse
	httpReq, err := a.newRequest(ctx, req)
	if err != nil {
		return out, err
	}
	data, answer, err := vendorhttp.Send(ctx, a.client, a.provider.ID, httpReq)
	if err != nil {
		return out, err
	}
	if answer != nil {
		return out, a.statusError(answer)
	}
	if err := json.Unmarshal(data, &out); err != nil || out.Type != "message" {
		if err == nil {
			err = fmt.Errorf("answer type %q, want message", out.Type)
		}
		return out, providers.Permanent(jobs.CodeBadResponse,
			fmt.Sprintf("provider %q sent an answer that is not a Messages API response", a.provider.ID), err)
	}
	return out, nil
}

// newRequest builds the POST of req to /messages.
func (a *Adapter) newRequest(ctx context.Context, req messagesRequest) (*http.Request, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("anthropic: encode request: %w", err)
	}
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, a.baseURL+"/messages", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("anthropic: build request: %w", err)
	}
	httpReq.Header.Set("x-api-key", a.apiKey)
	httpReq.Header.Set("anthropic-version", APIVersion)
	httpReq.Header.Set("content-type", "application/json")
	return httpReq, nil
}

func (a *Adapter) statusError(answer *vendorhttp.Answer) *providers.Error {
	status, body := answer.Status, answer.Body
	var ae apiError
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &ae) == nil && ae.Error.Message != "" {
		msg = ae.Error.Type + ": " + ae.Error.Message
	}
	if r := []rune(msg); len(r) > 300 {
		msg = string(r[:300]) + "…"
	}
	text := fmt.Sprintf("provider %q answered %d", a.provider.ID, status)
	if msg != "" {
		text += ": " + msg
	}
	var e *providers.Error
	switch {
	case status == http.StatusTooManyRequests, status == 529, status >= 500, status == http.StatusRequestTimeout:
		e = providers.Retryable(jobs.CodeProviderUnavailable, text, nil)
		e.RetryAfter = providers.RetryAfterHeader(answer.Header.Get("retry-after"))
	default:
		e = providers.Permanent(jobs.CodeProviderRejected, text, nil)
	}
	e.StatusCode = status
	return e
}
