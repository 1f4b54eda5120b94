package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/language"
	"golang.org/x/text/language/display"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/internal/llmtask"
	"github.com/ai-job-gateway/gateway/providers/internal/usage"
)

// temperatures maps llm-task creativity to a sampling temperature.
var temperatures = map[string]float64{"precise": 0.0, "balanced": 0.7, "creative": 1.2}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []chatMessage   `json:"messages"`
	Temperature    *float64        `json:"temperature,omitempty"`
	MaxTokens      *int            `json:"max_tokens,omitempty"`
	Stop           []string        `json:"stop,omitempty"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
	// Stream and StreamOptions are set for a streamed answer only
	// (chat_stream.go).
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

// responseFormat is chat completions' response_format: json_object, or
// json_schema with its schema.
type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type jsonSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict,omitempty"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// chat sends one chat completion and returns its first choice.
func (a *Adapter) chat(ctx context.Context, req chatRequest) (content, finish string, resp chatResponse, err error) {
	httpReq, err := a.newJSONRequest(ctx, "/chat/completions", req)
	if err != nil {
		return "", "", resp, err
	}
	body, err := a.send(ctx, httpReq)
	if err != nil {
		return "", "", resp, err
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return "", "", resp, a.badResponse(err)
	}
	if len(resp.Choices) == 0 {
		return "", "", resp, a.badResponse(fmt.Errorf("no choices in the answer"))
	}
	c := resp.Choices[0]
	if c.Message.Content != nil {
		content = *c.Message.Content
	}
	return content, c.FinishReason, resp, nil
}

// chatUsage builds a result's usage from the answer's token counts; cost is
// given when the pricing unit can be measured here.
func chatUsage(p providers.Pricing, resp chatResponse, characters int) *jobs.Usage {
	u := &jobs.Usage{}
	m := usage.Metered{Characters: characters, Pages: 1}
	measurable := p.Unit == providers.PerRequest || p.Unit == providers.PerCharacter
	if resp.Usage != nil {
		in, out := resp.Usage.PromptTokens, resp.Usage.CompletionTokens
		u.InputTokens, u.OutputTokens = &in, &out
		m.Tokens = in + out
		measurable = measurable || p.Unit == providers.PerToken
	}
	if measurable {
		cost := usage.Cost(p, m)
		u.Cost = &cost
	}
	return u
}

// llmTask runs an llm-task through chat completions.
func (a *Adapter) llmTask(ctx context.Context, call providers.Call) (any, error) {
	var (
		in   jobs.LLMTaskInput
		opts jobs.LLMTaskOptions
	)
	if err := call.Decode(&in, &opts); err != nil {
		return nil, err
	}
	if in.Type == "document" {
		return nil, providers.Permanent(jobs.CodeUnsupportedInput,
			"the openai adapter takes llm-task input of type text or messages only; route document tasks to another provider", nil)
	}
	task, err := llmtask.Build(in, opts, call.Capability(), a.model, temperatures)
	if err != nil {
		return nil, err
	}
	req := chatRequest{Model: task.Model, Temperature: task.Temperature, MaxTokens: task.MaxTokens, Stop: task.Stop}
	messages := task.Messages
	if f := task.ResponseFormat; f != nil {
		req.ResponseFormat = &responseFormat{Type: f.Type}
		if f.JSONSchema != nil {
			req.ResponseFormat.JSONSchema = &jsonSchema{Name: f.JSONSchema.Name, Description: f.JSONSchema.Description,
				Schema: f.JSONSchema.Schema, Strict: f.JSONSchema.Strict}
		}
		// JSON mode refuses a conversation that does not mention JSON
		// (docs/providers.md, openai).
		if f.Type == "json_object" && !task.Mentions("json") {
			messages = llmtask.WithSystem(messages, llmtask.JSONInstruction(f))
		}
	}
	for _, m := range messages {
		req.Messages = append(req.Messages, chatMessage{Role: m.Role, Content: m.Content})
	}

	var (
		content, finish string
		resp            chatResponse
	)
	if call.Stream != nil {
		content, finish, resp, err = a.chatStream(ctx, req, call.Stream)
	} else {
		content, finish, resp, err = a.chat(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	res := jobs.LLMTaskResult{Content: content, FinishReason: "completed"}
	if finish == "length" {
		res.FinishReason = "max_tokens"
	}
	// Always: the gateway bills the tokens and shows result.usage only
	// when the job set include_usage (docs/api.md, Usage and cost).
	res.Usage = chatUsage(call.Capability().Pricing, resp, task.Characters())
	return res, nil
}

// translate runs a text translation through chat completions.
func (a *Adapter) translate(ctx context.Context, call providers.Call) (any, error) {
	var (
		in   jobs.TranslationInput
		opts jobs.TranslationOptions
	)
	if err := call.Decode(&in, &opts); err != nil {
		return nil, err
	}
	if in.Type != "text" {
		return nil, providers.Permanent(jobs.CodeUnsupportedInput,
			"the openai adapter translates input of type text only; route document translations to another provider", nil)
	}
	source := opts.SourceLanguage
	if source == "auto" {
		source = ""
	}
	req := chatRequest{Model: a.model, Messages: []chatMessage{
		{Role: "system", Content: translationInstruction(source, in.TargetLanguage, opts.Formality)},
		{Role: "user", Content: in.Content},
	}}
	content, _, resp, err := a.chat(ctx, req)
	if err != nil {
		return nil, err
	}
	chars := utf8.RuneCountInString(in.Content)
	res := jobs.TranslationResult{
		// The chat API does not say which language it detected: "und"
		// is BCP 47 for undetermined.
		SourceLanguage: "und",
		TargetLanguage: in.TargetLanguage,
		Content:        content,
		CharacterCount: chars,
	}
	if source != "" {
		res.SourceLanguage = source
	}
	if opts.IncludeUsage {
		res.Usage = chatUsage(call.Capability().Pricing, resp, chars)
	}
	return res, nil
}

// translationInstruction is the system message of a translation.
func translationInstruction(source, target, formality string) string {
	var b strings.Builder
	b.WriteString("You are a translation engine. Translate the user's message")
	if source != "" {
		b.WriteString(" from " + languageName(source))
	}
	b.WriteString(" into " + languageName(target) + ".")
	switch formality {
	case "formal":
		b.WriteString(" Use a formal register.")
	case "informal":
		b.WriteString(" Use an informal register.")
	}
	b.WriteString(" Reply with the translation only, without explanations, notes or quotation marks.")
	return b.String()
}

// languageName spells a language code out for a prompt: "German (de)".
func languageName(code string) string {
	tag, err := language.Parse(code)
	if err != nil {
		return code
	}
	if name := display.English.Tags().Name(tag); name != "" {
		return fmt.Sprintf("%s (%s)", name, code)
	}
	return code
}
