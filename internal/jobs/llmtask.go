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
	in := l.Input
	return firstError(
		oneOf(in.Type, ptrInput+"/type", true, "text", "document"),
		requiredWhen(in.Type == "text", in.Text, ptrInput+"/text", "when type is text"),
		forbiddenWhen(in.Type == "text", in.URL, ptrInput+"/url", "when type is text; use text"),
		requiredWhen(in.Type == "document", in.URL, ptrInput+"/url", "when type is document"),
		mediaURL(in.URL, ptrInput+"/url", false),
		required(in.Prompt, ptrInput+"/prompt"),
		oneOf(l.Options.Creativity, ptrOptions+"/creativity", false, "precise", "balanced", "creative"),
	)
}

// Requirements asks for the pinned model, if any.
func (l *LLMTask) Requirements() Requirements {
	return Requirements{Service: LLMTasks, Model: l.Options.Model}
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
	Type         string `json:"type"` // text or document
	Text         string `json:"text,omitempty"`
	URL          string `json:"url,omitempty"` // the document variant (see docs/api.md)
	Prompt       string `json:"prompt"`
	SystemPrompt string `json:"system_prompt,omitempty"`
}

// LLMTaskOptions are the options of an llm-task job.
type LLMTaskOptions struct {
	Creativity   string `json:"creativity,omitempty"` // precise, balanced or creative
	IncludeUsage bool   `json:"include_usage,omitempty"`
	// Model pins a model the provider lists (an extension; see docs/api.md).
	Model string `json:"model,omitempty"`
}

// LLMTaskResult is the result of an llm-task job.
type LLMTaskResult struct {
	Content      string `json:"content"`
	FinishReason string `json:"finish_reason"` // completed or max_tokens
	Usage        *Usage `json:"usage,omitempty"`
}
