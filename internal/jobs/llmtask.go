package jobs

// LLMTasks is the service id.
const LLMTasks ServiceID = "llm-tasks"

func init() {
	Register[LLMTask](Service{
		ID:              LLMTasks,
		Order:           4,
		Name:            "LLM tasks",
		Description:     "Generic language-model task, independent of vendor or model.",
		JobType:         "llm-task-job",
		EventPrefix:     "llm-task",
		CapabilityLists: []string{"models"},
		Usage:           UsageTokens,
	})
}

// LLMTask is an llm-task job's input and options.
type LLMTask struct {
	Input   LLMTaskInput
	Options LLMTaskOptions
}

func (l *LLMTask) Parts() (input, options any) { return &l.Input, &l.Options }

func (l *LLMTask) Validate() error {
	in, opts := l.Input, l.Options
	messages := in.Type == "messages"
	return firstError(
		oneOf(in.Type, ptrInput+"/type", true, "text", "document", "messages"),
		requiredWhen(in.Type == "text", in.Text, ptrInput+"/text", "when type is text"),
		forbiddenWhen(in.Type == "text", in.URL, ptrInput+"/url", "when type is text; use text"),
		requiredWhen(in.Type == "document", in.URL, ptrInput+"/url", "when type is document"),
		forbiddenWhen(messages, in.Text, ptrInput+"/text", "when type is messages; put it in a message"),
		forbiddenWhen(messages, in.URL, ptrInput+"/url", "when type is messages"),
		forbiddenWhen(messages, in.Prompt, ptrInput+"/prompt", "when type is messages; put it in a user message"),
		forbiddenWhen(messages, in.SystemPrompt, ptrInput+"/system_prompt", "when type is messages; use a first message of role system"),
		mediaURL(in.URL, ptrInput+"/url", false),
		promptRequired(in.Prompt, !messages),
		llmMessages(in.Messages, messages),
		oneOf(opts.Creativity, ptrOptions+"/creativity", false, "precise", "balanced", "creative"),
		llmSampling(opts),
		opts.ResponseFormat.check(),
	)
}

// Requirements asks for the pinned model, if any, and for one that takes
// a JSON schema when the output must match one.
func (l *LLMTask) Requirements() Requirements {
	r := Requirements{Service: LLMTasks, Model: l.Options.Model}
	if l.Options.ResponseFormat != nil && l.Options.ResponseFormat.Type == "json_schema" {
		r.JSONSchema = true
	}
	return r
}

// Priority is always standard: llm-tasks have no priority option.
func (l *LLMTask) Priority() int { return priorityStandard }

func (l *LLMTask) ResultTypes() (offered []string, preferred string) { return jsonOnly() }

func (l *LLMTask) Render(mediaType string, result []byte) ([]byte, error) {
	if mediaType == MediaJSON {
		return result, nil
	}
	return nil, notOffered(LLMTasks, mediaType)
}

// LLMTaskInput is the input of an llm-task job.
type LLMTaskInput struct {
	Type         string `json:"type"` // text, document or messages
	Text         string `json:"text,omitempty"`
	URL          string `json:"url,omitempty"` // the document variant (see docs/api.md)
	Prompt       string `json:"prompt,omitempty"`
	SystemPrompt string `json:"system_prompt,omitempty"`
	// Messages are a conversation, the messages variant: an optional
	// first message of role system, then user and assistant messages.
	Messages []LLMMessage `json:"messages,omitempty"`
}

// LLMMessage is one message of a conversation.
type LLMMessage struct {
	Role    string `json:"role"` // system, user or assistant
	Content string `json:"content"`
}

// LLMTaskOptions are the options of an llm-task job.
type LLMTaskOptions struct {
	Creativity   string `json:"creativity,omitempty"` // precise, balanced or creative
	IncludeUsage bool   `json:"include_usage,omitempty"`
	// Model pins a model the provider lists (an extension; see docs/api.md).
	Model string `json:"model,omitempty"`
	// MaxTokens bounds the answer's tokens; nil: the provider's default.
	MaxTokens *int `json:"max_tokens,omitempty"`
	// Temperature is the sampling temperature, 0 to 2 (creativity's
	// alternative); nil: the provider's default.
	Temperature *float64 `json:"temperature,omitempty"`
	// Stop are up to MaxStopSequences texts the answer ends before.
	Stop []string `json:"stop,omitempty"`
	// ResponseFormat asks for plain text (nil too), a JSON object, or
	// JSON that matches a schema.
	ResponseFormat *LLMResponseFormat `json:"response_format,omitempty"`
	// Stream asks providers that stream for the answer as it is written,
	// for the job's llm-task.delta events (docs/api.md, Streamed answers).
	Stream bool `json:"stream,omitempty"`
}

// LLMTaskResult is the result of an llm-task job.
type LLMTaskResult struct {
	Content      string `json:"content"`
	FinishReason string `json:"finish_reason"` // completed or max_tokens
	Usage        *Usage `json:"usage,omitempty"`
}

// promptRequired requires input.prompt of the text and document variants.
func promptRequired(prompt string, needed bool) *FieldError {
	if !needed {
		return nil
	}
	return required(prompt, ptrInput+"/prompt")
}
