package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
)

// OpenAIPath is the root of the OpenAI-compatible surface (docs/openai.md).
const OpenAIPath = "/openai/v1"

// JobIDHeader names, on every OpenAI-compatible answer that made a job,
// the job (docs/openai.md).
const JobIDHeader = "X-Gateway-Job-Id"

// openAIWait bounds how long a chat completion waits for its job; a job
// still running then answers 504 (docs/openai.md).
const openAIWait = 60 * time.Second

// openAIPollInterval is how often a chat completion rereads its job when
// the API has no JobWaiter.
const openAIPollInterval = 200 * time.Millisecond

// autoModel is the model name that leaves the choice to routing.
const autoModel = "auto"

// openAIHandler serves the OpenAI-compatible surface: chat completions,
// each one llm-task job submitted through jobops and waited for, and the
// models (docs/openai.md).
type openAIHandler struct {
	jobs    jobReader
	ops     JobOps
	catalog *providers.Catalog
	// policies are the routing policies a model may name.
	policies interface {
		RoutingPolicies(ctx context.Context, tenant string, service jobs.ServiceID) ([]policy.Policy, error)
	}
	// waiter waits for a job; nil: the job is polled.
	waiter JobWaiter
	// uploads keeps the audio of transcriptions; nil answers them 503.
	uploads blobUploads
	// events reads a job's lifecycle events and streamed answer, for
	// stream: true; nil refuses streaming.
	events JobEventStore
	// batches serves the files and batches routes.
	batches openAIBatches
	metrics jobCounter
	logger  *slog.Logger
}

// routes registers /openai/v1 behind authenticate, its errors rendered in
// OpenAI's shape.
func (h openAIHandler) routes(r gin.IRouter, authenticate gin.HandlerFunc) {
	g := r.Group(OpenAIPath, authenticate, recordActor) // errors: openAIErrors, in router
	g.POST("/chat/completions", auth.RequireScope(string(jobs.LLMTasks)+":write"), handle(h.chat))
	g.GET("/models", auth.RequireScope(string(jobs.LLMTasks)+":read"), handle(h.models))
	g.POST("/audio/transcriptions", auth.RequireScope(string(jobs.Transcriptions)+":write"), handle(h.transcriptions))
	g.POST("/audio/translations", auth.RequireScope(string(jobs.Transcriptions)+":write"), handle(h.translations))
	h.batches.routes(g)
}

// openAIError is an error in OpenAI's shape, {"error": {"message", "type",
// "param", "code"}}.
type openAIError struct {
	status  int
	typ     string
	param   string
	code    string
	message string
	header  http.Header
}

func (e *openAIError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.typ, e.message) }

// OpenAI's error types.
const (
	openAIInvalidRequest = "invalid_request_error"
	openAIServerError    = "server_error"
)

// invalidParam is the 400 OpenAI answers a request parameter it refuses.
func invalidParam(param, format string, args ...any) *openAIError {
	return &openAIError{status: http.StatusBadRequest, typ: openAIInvalidRequest, param: param,
		message: fmt.Sprintf(format, args...)}
}

// unsupportedParam refuses a parameter the gateway does not offer.
func unsupportedParam(param, what string) *openAIError {
	e := invalidParam(param, "Unsupported parameter: '%s': %s is not supported by this gateway (docs/openai.md).", param, what)
	e.code = "unsupported_parameter"
	return e
}

// openAIErrors renders the error a handler or middleware left on the
// context in OpenAI's shape, for requests under OpenAIPath; others are
// left to renderErrors.
func openAIErrors(logger *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Next()
		path := c.Request.URL.Path
		if path != OpenAIPath && !strings.HasPrefix(path, OpenAIPath+"/") {
			return
		}
		if len(c.Errors) == 0 || c.Writer.Written() {
			return
		}
		e := asOpenAIError(c, logger, c.Errors.Last().Err)
		writeError(c, e.status, e.header, gin.H{"error": gin.H{"message": e.message, "type": e.typ,
			"param": nullIfEmpty(e.param), "code": nullIfEmpty(e.code)}})
	}
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// asOpenAIError is err as OpenAI would answer it: the gateway's 422s are
// 400s naming the parameter, 401s have code invalid_api_key, other
// statuses stay (docs/openai.md, Errors).
func asOpenAIError(c *gin.Context, logger *slog.Logger, err error) *openAIError {
	var own *openAIError
	if errors.As(err, &own) {
		return own
	}
	apiErr := classify(c, logger, err)
	e := &openAIError{status: apiErr.Status, typ: openAIInvalidRequest, code: strings.ToLower(apiErr.Code),
		message: apiErr.Message, header: apiErr.Header}
	switch {
	case apiErr.Status == http.StatusUnauthorized:
		e.code = "invalid_api_key"
	case apiErr.Status == http.StatusUnprocessableEntity:
		e.status = http.StatusBadRequest
	case apiErr.Status == http.StatusPaymentRequired:
		e.typ = "insufficient_quota"
	case apiErr.Status == http.StatusTooManyRequests:
		e.typ, e.code = "requests", "rate_limit_exceeded"
	case apiErr.Status >= 500:
		e.typ = openAIServerError
	}
	if pointer, rest, ok := strings.Cut(apiErr.Message, ": "); ok && strings.HasPrefix(pointer, jobs.PtrAttributes+"/") {
		if e.param = openAIParam(pointer, maxTokensParam(c)); e.param != "" {
			e.message = fmt.Sprintf("Invalid '%s': %s", e.param, rest)
		}
	}
	return e
}

// maxTokensParamKey holds, in a chat request's gin context, which of
// max_tokens and max_completion_tokens it sent.
const maxTokensParamKey = "api.openai.max_tokens_param"

func maxTokensParam(c *gin.Context) string {
	if name := c.GetString(maxTokensParamKey); name != "" {
		return name
	}
	return "max_tokens"
}

// openAIParam is the chat request parameter an llm-task's JSON pointer
// names (/data/attributes/input/messages/2/content: messages[2].content),
// "" when it names none.
func openAIParam(pointer, maxTokens string) string {
	rest, ok := strings.CutPrefix(pointer, jobs.PtrAttributes+"/")
	if !ok {
		return ""
	}
	segments := strings.Split(rest, "/")
	switch segments[0] {
	case "input":
		if len(segments) < 3 || segments[1] != "messages" {
			return "messages"
		}
		segments = segments[1:]
	case "options":
		if len(segments) < 2 {
			return ""
		}
		segments = segments[1:]
		switch segments[0] {
		case "max_tokens":
			return maxTokens
		case "stop":
			return "stop"
		}
	default:
		return ""
	}
	var b strings.Builder
	for i, s := range segments {
		s = strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
		switch _, err := strconv.Atoi(s); {
		case err == nil && i > 0:
			b.WriteString("[" + s + "]")
		case i > 0:
			b.WriteString("." + s)
		default:
			b.WriteString(s)
		}
	}
	return b.String()
}

// chatRequest is the part of OpenAI's chat completion request the gateway
// reads; the parameters it refuses are checked before (refusedParams).
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	Stop                json.RawMessage `json:"stop"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	N                   *int            `json:"n"`
	Stream              *bool           `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage *bool `json:"include_usage"`
	} `json:"stream_options"`
}

// streamed reports whether the request asks for stream: true.
func (r *chatRequest) streamed() bool { return r.Stream != nil && *r.Stream }

type chatMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	ToolCalls    json.RawMessage `json:"tool_calls"`
	FunctionCall json.RawMessage `json:"function_call"`
}

// refusedParams are the chat request's parameters the gateway does not
// offer, refused when given a value other than null, false, [] or {}
// (docs/openai.md, What is refused).
var refusedParams = []struct{ name, what string }{
	{"tools", "tool calling"},
	{"tool_choice", "tool calling"},
	{"parallel_tool_calls", "tool calling"},
	{"functions", "function calling"},
	{"function_call", "function calling"},
	{"logprobs", "logprobs"},
	{"top_logprobs", "logprobs"},
	{"audio", "audio output"},
	{"prediction", "predicted output"},
	{"web_search_options", "web search"},
	{"logit_bias", "logit_bias"},
}

// chat handles POST /openai/v1/chat/completions: the request becomes one
// llm-task job of the caller's tenant, which the answer waits for.
func (h openAIHandler) chat(c *gin.Context) error {
	by, err := creatorOf(c)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return err
	}
	received := time.Now()
	req, err := parseChatRequest(body)
	if err != nil {
		return err
	}
	if req.MaxCompletionTokens != nil {
		c.Set(maxTokensParamKey, "max_completion_tokens")
	}
	if req.streamed() && h.events == nil {
		e := invalidParam("stream", "Unsupported value: 'stream': this gateway serves no job events, so it cannot stream; send stream false or leave it out (docs/openai.md, Streaming).")
		e.code = "unsupported_value"
		return e
	}
	policyID, err := h.namedPolicy(c, by.Tenant, req.Model)
	if err != nil {
		return err
	}
	envelope, err := chatJobBody(req, policyID)
	if err != nil {
		return err
	}
	svc, _ := jobs.ServiceOf(jobs.LLMTasks)
	submit, err := parseJobRequest(svc, envelope)
	if err != nil {
		return err
	}
	submit.Requester = by
	submit.Body, submit.Received = body, received
	job, err := h.ops.Submit(c.Request.Context(), *submit)
	if err != nil {
		return jobopsError(err)
	}
	c.Header(JobIDHeader, job.ID)
	// A job was made: an SDK retrying this answer would make another
	// (the OpenAI SDKs honour this header; docs/openai.md).
	c.Header("X-Should-Retry", "false")
	h.metrics.JobCreated(string(svc.ID))
	if req.streamed() {
		includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage != nil && *req.StreamOptions.IncludeUsage
		return h.streamChat(c, job, req.Model, includeUsage)
	}
	job, err = h.await(c, job)
	if err != nil || c.Request.Context().Err() != nil {
		return err // the client is gone when err is nil: nobody reads the answer
	}
	model := req.Model
	switch job.Status {
	case jobs.StatusCompleted:
		completion, err := chatCompletionOf(job, model)
		if err != nil {
			return err
		}
		c.JSON(http.StatusOK, completion)
		return nil
	case jobs.StatusFailed:
		return jobFailure(job)
	}
	return &openAIError{status: http.StatusGatewayTimeout, typ: openAIServerError, code: "job_still_running",
		message: fmt.Sprintf("the job %s is still %s after %s; its answer will be at GET %s/%s/result",
			job.ID, job.Status, openAIWait, svc.Endpoint(), job.ID)}
}

// parseChatRequest reads and checks a chat completion request's body.
func parseChatRequest(body []byte) (*chatRequest, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, invalidParam("", "We could not parse the JSON body of your request: it must be a JSON object.")
	}
	for _, p := range refusedParams {
		if given(fields[p.name]) {
			return nil, unsupportedParam(p.name, p.what)
		}
	}
	if m := fields["modalities"]; given(m) && string(compactJSON(m)) != `["text"]` {
		return nil, unsupportedParam("modalities", "output other than text")
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, invalidParam(typeErr.Field, "Invalid type for '%s': expected %s, got a JSON %s.", typeErr.Field, typeErr.Type, typeErr.Value)
		}
		return nil, invalidParam("", "We could not parse the JSON body of your request.")
	}
	switch {
	case req.StreamOptions != nil && !req.streamed():
		return nil, invalidParam("stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	case req.N != nil && *req.N != 1:
		return nil, unsupportedParam("n", "more than one choice (n other than 1)")
	case req.Model == "":
		return nil, invalidParam("model", "Missing required parameter: 'model'.")
	case fields["messages"] == nil:
		return nil, invalidParam("messages", "Missing required parameter: 'messages'.")
	case len(req.Messages) == 0:
		return nil, invalidParam("messages", "Invalid 'messages': empty array. Expected an array with minimum length 1.")
	}
	return &req, nil
}

// given reports whether a parameter has a value other than null, false,
// [] or {}.
func given(raw json.RawMessage) bool {
	switch string(compactJSON(raw)) {
	case "", "null", "false", "[]", "{}":
		return false
	}
	return true
}

func compactJSON(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// chatJobBody is the llm-task create request (docs/api.md, LLM tasks) a
// chat request stands for.
func chatJobBody(req *chatRequest, policyID string) ([]byte, error) {
	messages := make([]map[string]string, 0, len(req.Messages))
	for i, m := range req.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		role := m.Role
		switch role {
		case "developer":
			role = "system"
		case "tool", "function":
			return nil, unsupportedParam(param+".role", "a "+role+" message (tool calling)")
		}
		if given(m.ToolCalls) {
			return nil, unsupportedParam(param+".tool_calls", "tool calling")
		}
		if given(m.FunctionCall) {
			return nil, unsupportedParam(param+".function_call", "function calling")
		}
		content, err := messageText(m.Content, param+".content")
		if err != nil {
			return nil, err
		}
		messages = append(messages, map[string]string{"role": role, "content": content})
	}
	options := map[string]any{}
	if req.Model != autoModel && policyID == "" {
		options["model"] = req.Model
	}
	if req.MaxCompletionTokens != nil {
		options["max_tokens"] = *req.MaxCompletionTokens
	} else if req.MaxTokens != nil {
		options["max_tokens"] = *req.MaxTokens
	}
	if req.Temperature != nil {
		options["temperature"] = *req.Temperature
	}
	if given(req.Stop) {
		var one string
		if json.Unmarshal(req.Stop, &one) == nil {
			options["stop"] = []string{one}
		} else {
			options["stop"] = req.Stop
		}
	}
	if given(req.ResponseFormat) {
		options["response_format"] = req.ResponseFormat
	}
	if req.streamed() {
		options["stream"] = true
	}
	attributes := map[string]any{"input": map[string]any{"type": "messages", "messages": messages}}
	if len(options) > 0 {
		attributes["options"] = options
	}
	if policyID != "" {
		attributes["policy_id"] = policyID
	}
	return json.Marshal(map[string]any{"data": map[string]any{"type": "llm-task-job", "attributes": attributes}})
}

// messageText is a message's content: a string, or text parts, joined by
// newlines; null is "" (the job model refuses an empty message).
func messageText(raw json.RawMessage, param string) (string, error) {
	if !given(raw) {
		return "", nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", invalidParam(param, "Invalid '%s': expected a string or an array of content parts.", param)
	}
	texts := make([]string, 0, len(parts))
	for j, p := range parts {
		partParam := fmt.Sprintf("%s[%d]", param, j)
		if p.Type != "text" {
			return "", unsupportedParam(partParam+".type", fmt.Sprintf("content of type %q (only text parts are)", p.Type))
		}
		if p.Text == nil {
			return "", invalidParam(partParam+".text", "Missing required parameter: '%s.text'.", partParam)
		}
		texts = append(texts, *p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// await waits, up to openAIWait or the client's leaving, until the job is
// completed or failed, then rereads it.
func (h openAIHandler) await(c *gin.Context, job *jobs.Record) (*jobs.Record, error) {
	if job.Terminal() {
		return job, nil
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), openAIWait)
	defer cancel()
	start := time.Now()
	defer func() { c.Set(waitedKey, time.Since(start)) }()
	if h.waiter != nil {
		h.waiter.WaitTerminal(ctx, job.ID)
		return h.reread(c, job)
	}
	tick := time.NewTicker(openAIPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return h.reread(c, job)
		case <-tick.C:
			now, err := h.jobs.GetJob(ctx, job.ID)
			if err == nil && now.Terminal() {
				return now, nil
			}
		}
	}
}

// reread is the job as the store now has it; job itself when the client
// is gone.
func (h openAIHandler) reread(c *gin.Context, job *jobs.Record) (*jobs.Record, error) {
	if c.Request.Context().Err() != nil {
		return job, nil
	}
	return h.jobs.GetJob(c.Request.Context(), job.ID)
}

// chatCompletion is OpenAI's chat.completion object.
type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage,omitempty"`
}

type chatChoice struct {
	Index        int               `json:"index"`
	Message      chatAnswerMessage `json:"message"`
	FinishReason string            `json:"finish_reason"`
	Logprobs     *struct{}         `json:"logprobs"`
}

type chatAnswerMessage struct {
	Role    string  `json:"role"`
	Content string  `json:"content"`
	Refusal *string `json:"refusal"`
}

type chatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// chatCompletionOf is the completed job's answer; model is the one asked
// for (the gateway does not record which model of a provider answered).
func chatCompletionOf(job *jobs.Record, model string) (*chatCompletion, error) {
	var result jobs.LLMTaskResult
	if err := json.Unmarshal([]byte(job.Result), &result); err != nil {
		return nil, fmt.Errorf("read the result of job %s: %w", job.ID, err)
	}
	finish := "stop"
	if result.FinishReason == "max_tokens" {
		finish = "length"
	}
	out := &chatCompletion{ID: "chatcmpl-" + job.ID, Object: "chat.completion", Created: job.CreatedAt.Unix(), Model: model,
		Choices: []chatChoice{{Message: chatAnswerMessage{Role: "assistant", Content: result.Content}, FinishReason: finish}}}
	var usage jobs.JobUsage
	if job.Usage != "" && json.Unmarshal([]byte(job.Usage), &usage) == nil &&
		(usage.Native.InputTokens != nil || usage.Native.OutputTokens != nil) {
		u := &chatUsage{}
		if usage.Native.InputTokens != nil {
			u.PromptTokens = *usage.Native.InputTokens
		}
		if usage.Native.OutputTokens != nil {
			u.CompletionTokens = *usage.Native.OutputTokens
		}
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		out.Usage = u
	}
	return out, nil
}

// jobFailure is the answer of a failed job, its status chosen by the
// job's error code (docs/openai.md, Errors).
func jobFailure(job *jobs.Record) *openAIError {
	e := &openAIError{status: http.StatusInternalServerError, typ: openAIServerError, code: strings.ToLower(job.ErrorCode),
		message: fmt.Sprintf("the job %s failed: %s: %s", job.ID, job.ErrorCode, job.ErrorMessage)}
	switch job.ErrorCode {
	case jobs.CodeProvidersExhausted, jobs.CodeProviderUnavailable, jobs.CodeBadResponse:
		e.status = http.StatusBadGateway
	case jobs.CodeNoEligibleProvider:
		e.status = http.StatusServiceUnavailable
	case jobs.CodeOutputInvalid:
		e.status, e.typ, e.param = http.StatusBadRequest, openAIInvalidRequest, "response_format"
	case jobs.CodeProviderRejected, jobs.CodeInvalidInput, jobs.CodeUnsupportedInput, jobs.CodeUnsupportedOption:
		e.status, e.typ = http.StatusBadRequest, openAIInvalidRequest
	case jobs.CodeCancelled:
		e.status, e.typ = http.StatusUnprocessableEntity, openAIInvalidRequest
	case jobs.CodeBudgetExceeded:
		e.status, e.typ = http.StatusPaymentRequired, "insufficient_quota"
	}
	return e
}

// openAIModel is an entry of OpenAI's model list.
type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// models handles GET /openai/v1/models: "auto", then each llm-tasks model
// the catalog lists, owned by the first provider listing it, then the
// names of the routing policies of llm-tasks the caller's tenant may use
// (owned by "policy"), where no model has the name.
func (h openAIHandler) models(c *gin.Context) error {
	data := []openAIModel{{ID: autoModel, Object: "model", OwnedBy: "ai-job-gateway"}}
	seen := map[string]bool{autoModel: true}
	for _, p := range h.catalog.Providers {
		capability := p.Services[jobs.LLMTasks]
		if capability == nil {
			continue
		}
		for _, m := range capability.Models {
			if !seen[m] {
				seen[m] = true
				data = append(data, openAIModel{ID: m, Object: "model", OwnedBy: p.ID})
			}
		}
	}
	tenant, _, err := auth.EffectiveIdentity(c)
	if err != nil {
		return err
	}
	if h.policies != nil && tenant != "" {
		policies, err := h.policies.RoutingPolicies(c.Request.Context(), tenant, jobs.LLMTasks)
		if err != nil {
			return err
		}
		for _, p := range ownFirst(policies) {
			if !seen[p.Name] {
				seen[p.Name] = true
				data = append(data, openAIModel{ID: p.Name, Object: "model", OwnedBy: "policy"})
			}
		}
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
	return nil
}

// namedPolicy is the id of the routing policy a chat's model names: not
// "auto" nor a model the catalog lists, but the name of a policy of
// llm-tasks of tenant's, else of the gateway's (the newest of that name).
// "" when it names none.
func (h openAIHandler) namedPolicy(c *gin.Context, tenant, model string) (string, error) {
	if model == autoModel || h.policies == nil || slices.Contains(catalogModels(h.catalog), model) {
		return "", nil
	}
	policies, err := h.policies.RoutingPolicies(c.Request.Context(), tenant, jobs.LLMTasks)
	if err != nil {
		return "", err
	}
	for _, p := range ownFirst(policies) {
		if p.Name == model {
			return p.ID, nil
		}
	}
	return "", nil
}

// ownFirst are policies with the tenant's own before the gateway's, each
// group in its order: a tenant's policy keeps its name whatever the
// gateway's are called.
func ownFirst(policies []policy.Policy) []policy.Policy {
	out := make([]policy.Policy, 0, len(policies))
	for _, global := range []bool{false, true} {
		for _, p := range policies {
			if p.Global() == global {
				out = append(out, p)
			}
		}
	}
	return out
}

// policyModels are the llm-tasks models the catalog lists.
func catalogModels(catalog *providers.Catalog) []string {
	var models []string
	for _, p := range catalog.Providers {
		if capability := p.Services[jobs.LLMTasks]; capability != nil {
			models = append(models, capability.Models...)
		}
	}
	return models
}
