// Package llmtask turns an llm-task into the parts of a chat request that
// every chat API shares (docs/providers.md).
package llmtask

import (
	"fmt"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// Prompt is an llm-task as a chat API takes it.
type Prompt struct {
	// System is input.system_prompt ("" when none).
	System string
	// User is the prompt, then, when the input has text, a blank line and
	// the text.
	User string
	// Model is options.model, or the adapter's default.
	Model string
	// Temperature is options.creativity on the API's scale; nil leaves the
	// API's default.
	Temperature *float64
}

// Build reads the task; temperatures maps creativity (precise, balanced,
// creative) to the API's temperature.
func Build(in jobs.LLMTaskInput, opts jobs.LLMTaskOptions, defaultModel string, temperatures map[string]float64) (Prompt, error) {
	p := Prompt{System: in.SystemPrompt, User: in.Prompt, Model: defaultModel}
	if in.Text != "" {
		p.User += "\n\n" + in.Text
	}
	if opts.Model != "" {
		p.Model = opts.Model
	}
	if opts.Creativity != "" {
		t, ok := temperatures[opts.Creativity]
		if !ok {
			return p, providers.InputError(jobs.CodeInvalidInput,
				fmt.Sprintf("options.creativity %q is not one of precise, balanced, creative", opts.Creativity), nil)
		}
		p.Temperature = &t
	}
	return p, nil
}
