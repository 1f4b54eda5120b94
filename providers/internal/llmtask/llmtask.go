// Package llmtask turns an llm-task into the parts of a chat request that
// every chat API shares (docs/providers.md).
package llmtask

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// Request is an llm-task as a chat API takes it.
type Request struct {
	// Messages are the conversation: a system message first when there
	// is one, then user and assistant messages. The text and document
	// variants are input.system_prompt, when given, and one user message:
	// the prompt, then, when the input has text, a blank line and the text.
	Messages []jobs.LLMMessage
	// Model is options.model, or the adapter's default (see Build for
	// json_schema).
	Model string
	// Temperature is options.temperature, or options.creativity on the
	// API's scale; nil leaves the API's default.
	Temperature *float64
	// MaxTokens is options.max_tokens; nil leaves it to the adapter.
	MaxTokens *int
	// Stop is options.stop.
	Stop []string
	// ResponseFormat is options.response_format when it asks for JSON;
	// nil for text.
	ResponseFormat *jobs.LLMResponseFormat
}

// Build reads the task: temperatures maps creativity (precise, balanced,
// creative) to the API's temperature, and capability is the provider's
// llm-tasks capability. A json_schema task that pins no model goes to
// defaultModel when it is one of the capability's json_schema_models, else
// to the first of them (docs/providers.md, The catalog file).
func Build(in jobs.LLMTaskInput, opts jobs.LLMTaskOptions, capability providers.Capability, defaultModel string, temperatures map[string]float64) (Request, error) {
	r := Request{Model: defaultModel, MaxTokens: opts.MaxTokens, Stop: opts.Stop, Temperature: opts.Temperature}
	if in.Type == "messages" {
		r.Messages = in.Messages
	} else {
		if in.SystemPrompt != "" {
			r.Messages = append(r.Messages, jobs.LLMMessage{Role: "system", Content: in.SystemPrompt})
		}
		user := in.Prompt
		if in.Text != "" {
			user += "\n\n" + in.Text
		}
		r.Messages = append(r.Messages, jobs.LLMMessage{Role: "user", Content: user})
	}
	if f := opts.ResponseFormat; f != nil && f.Type != "" && f.Type != "text" {
		r.ResponseFormat = f
	}
	switch {
	case opts.Model != "":
		r.Model = opts.Model
	case r.ResponseFormat != nil && r.ResponseFormat.Type == "json_schema" &&
		len(capability.JSONSchemaModels) > 0 && !slices.Contains(capability.JSONSchemaModels, defaultModel):
		r.Model = capability.JSONSchemaModels[0]
	}
	if opts.Creativity != "" {
		t, ok := temperatures[opts.Creativity]
		if !ok {
			return r, providers.InputError(jobs.CodeInvalidInput,
				fmt.Sprintf("options.creativity %q is not one of precise, balanced, creative", opts.Creativity), nil)
		}
		r.Temperature = &t
	}
	return r, nil
}

// System is the system message's content ("" when none).
func (r Request) System() string {
	if len(r.Messages) > 0 && r.Messages[0].Role == "system" {
		return r.Messages[0].Content
	}
	return ""
}

// Turns are the user and assistant messages, without the system message.
func (r Request) Turns() []jobs.LLMMessage {
	if len(r.Messages) > 0 && r.Messages[0].Role == "system" {
		return r.Messages[1:]
	}
	return r.Messages
}

// Characters counts the characters of every message's content.
func (r Request) Characters() int {
	n := 0
	for _, m := range r.Messages {
		n += utf8.RuneCountInString(m.Content)
	}
	return n
}

// Mentions reports whether some message says word, in any case.
func (r Request) Mentions(word string) bool {
	word = strings.ToLower(word)
	for _, m := range r.Messages {
		if strings.Contains(strings.ToLower(m.Content), word) {
			return true
		}
	}
	return false
}

// JSONInstruction tells the model to answer with JSON only, and with the
// schema of a json_schema format; "" when the format is nil. For APIs
// without a response format, and for json_object requests that must
// mention JSON (docs/providers.md).
func JSONInstruction(f *jobs.LLMResponseFormat) string {
	switch {
	case f == nil:
		return ""
	case f.Type == "json_schema" && f.JSONSchema != nil:
		return fmt.Sprintf("Answer with one JSON value only, with no text, explanation or Markdown code fence around it. "+
			"It must match this JSON schema (draft 2020-12), named %q:\n%s", f.JSONSchema.Name, f.JSONSchema.Schema)
	default:
		return "Answer with one JSON object only, with no text, explanation or Markdown code fence around it."
	}
}

// WithSystem returns messages whose system message ends with instruction:
// appended after a blank line to the first message when it is a system
// message, else a new first system message.
func WithSystem(messages []jobs.LLMMessage, instruction string) []jobs.LLMMessage {
	out := make([]jobs.LLMMessage, 0, len(messages)+1)
	if len(messages) > 0 && messages[0].Role == "system" {
		out = append(out, jobs.LLMMessage{Role: "system", Content: messages[0].Content + "\n\n" + instruction})
		return append(out, messages[1:]...)
	}
	out = append(out, jobs.LLMMessage{Role: "system", Content: instruction})
	return append(out, messages...)
}
