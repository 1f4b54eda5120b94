package jobs

func init() { register[LLMTask](LLMTasks) }

// LLMTask is an llm-task job's input and options.
type LLMTask struct {
	Input   LLMTaskInput
	Options LLMTaskOptions
}

func (l *LLMTask) parts() (input, options any) { return &l.Input, &l.Options }

func (l *LLMTask) validate() error {
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
