package jobs

import (
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/providers"
)

func init() { register[LLMTask](providers.LLMTasks) }

// LLMTask is an llm-task job's input and options.
type LLMTask struct {
	Input   providers.LLMTaskInput
	Options providers.LLMTaskOptions
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
func (l *LLMTask) Requirements() policy.Requirements {
	return policy.Requirements{Service: providers.LLMTasks, Model: l.Options.Model}
}

// Priority is always standard: llm-tasks have no priority option.
func (l *LLMTask) Priority() int { return priorityStandard }

func (l *LLMTask) ResultTypes() (offered []string, preferred string) { return jsonOnly() }

func (l *LLMTask) Render(mediaType string, result []byte) ([]byte, error) {
	if mediaType == MediaJSON {
		return result, nil
	}
	return nil, notOffered(providers.LLMTasks, mediaType)
}
