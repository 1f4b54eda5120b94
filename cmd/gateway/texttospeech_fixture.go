//go:build fifthservice

// A fifth service, text-to-speech, built into the gateway only by the
// fifthservice build tag (TestFifthServiceNeedsOneDescriptorAndOneAdapter):
// one descriptor and one adapter, as docs/architecture.md says a new
// service needs, and nothing else of the gateway edited.
package main

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// textToSpeech is the fixture service's id.
const textToSpeech jobs.ServiceID = "text-to-speech"

func init() {
	jobs.Register[speechRequest](jobs.Service{
		ID:          textToSpeech,
		Order:       5,
		Name:        "Text to speech",
		Description: "Text read aloud.",
		JobType:     "text-to-speech-job",
		EventPrefix: "text-to-speech",
		Usage:       jobs.UsageCharacters,
	})
	tagAdapters["speech-fixture"] = func(*providers.Provider) (providers.Adapter, error) { return speechAdapter{}, nil }
}

// speechRequest is a text-to-speech job's input and options.
type speechRequest struct {
	Input struct {
		Text  string `json:"text"`
		Voice string `json:"voice,omitempty"`
	}
	Options struct{}
}

func (r *speechRequest) Parts() (input, options any) { return &r.Input, &r.Options }

func (r *speechRequest) Validate() error {
	if strings.TrimSpace(r.Input.Text) == "" {
		return &jobs.FieldError{Pointer: "/input/text", Message: "is required"}
	}
	return nil
}

func (r *speechRequest) Requirements() jobs.Requirements {
	return jobs.Requirements{Service: textToSpeech}
}

func (r *speechRequest) Priority() int { return 3 }

func (r *speechRequest) ResultTypes() (offered []string, preferred string) {
	return []string{jobs.MediaJSON}, jobs.MediaJSON
}

func (r *speechRequest) Render(_ string, result []byte) ([]byte, error) { return result, nil }

// speechAdapter "reads" the text: a second per 15 characters.
type speechAdapter struct{}

func (speechAdapter) Services() []jobs.ServiceID { return []jobs.ServiceID{textToSpeech} }

func (speechAdapter) Run(_ context.Context, call providers.Call) (json.RawMessage, error) {
	var in struct{ Text, Voice string }
	if err := call.Decode(&in, &struct{}{}); err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"voice": in.Voice, "duration": float64(len(in.Text)) / 15})
}
