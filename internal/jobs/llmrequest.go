package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Bounds of an llm-task's request (docs/api.md, LLM tasks).
const (
	MaxMessages      = 1000
	MaxStopSequences = 4
	MaxStopLength    = 200
	MaxOutputTokens  = 1_000_000
	maxTemperature   = 2.0
)

// llmMessages checks the messages of an input of type messages (given
// says it is one): an optional first system message, then user and
// assistant messages, at least one of them a user's.
func llmMessages(messages []LLMMessage, given bool) *FieldError {
	pointer := ptrInput + "/messages"
	switch {
	case !given && messages != nil:
		return invalid(pointer, "is only for type messages")
	case !given:
		return nil
	case len(messages) == 0:
		return invalid(pointer, "is required when type is messages (at least one message of role user)")
	case len(messages) > MaxMessages:
		return invalid(pointer, "has %d messages; at most %d", len(messages), MaxMessages)
	}
	users := 0
	for i, m := range messages {
		at := fmt.Sprintf("%s/%d", pointer, i)
		switch m.Role {
		case "system":
			if i > 0 {
				return invalid(at+"/role", "system is only for the first message")
			}
		case "user":
			users++
		case "assistant":
		default:
			return invalid(at+"/role", "must be one of system, user, assistant, not %q", m.Role)
		}
		if strings.TrimSpace(m.Content) == "" {
			return invalid(at+"/content", "is required")
		}
	}
	if users == 0 {
		return invalid(pointer, "needs at least one message of role user")
	}
	return nil
}

// llmSampling checks max_tokens, temperature and stop.
func llmSampling(o LLMTaskOptions) *FieldError {
	switch {
	case o.MaxTokens != nil && (*o.MaxTokens < 1 || *o.MaxTokens > MaxOutputTokens):
		return invalid(ptrOptions+"/max_tokens", "must be a whole number from 1 to %d", MaxOutputTokens)
	case o.Temperature != nil && (*o.Temperature < 0 || *o.Temperature > maxTemperature):
		return invalid(ptrOptions+"/temperature", "must be a number from 0 to 2")
	case o.Temperature != nil && o.Creativity != "":
		return invalid(ptrOptions+"/temperature", "is not allowed with creativity; give one of them")
	case len(o.Stop) > MaxStopSequences:
		return invalid(ptrOptions+"/stop", "has %d sequences; at most %d", len(o.Stop), MaxStopSequences)
	}
	for i, s := range o.Stop {
		if s == "" || len(s) > MaxStopLength {
			return invalid(fmt.Sprintf("%s/stop/%d", ptrOptions, i), "must be 1 to %d bytes", MaxStopLength)
		}
	}
	return nil
}

// LLMResponseFormat is what an llm-task's answer must be: text, a JSON
// object, or JSON matching JSONSchema.
type LLMResponseFormat struct {
	Type       string         `json:"type"` // text, json_object or json_schema
	JSONSchema *LLMJSONSchema `json:"json_schema,omitempty"`
}

// LLMJSONSchema names a JSON schema (draft 2020-12) the answer must match.
type LLMJSONSchema struct {
	Name string `json:"name"`
	// Description tells the model what the answer is for.
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
	// Strict asks providers that can to hold their output to the schema;
	// the gateway checks the output either way.
	Strict *bool `json:"strict,omitempty"`
}

// check checks the format and compiles its schema.
func (f *LLMResponseFormat) check() *FieldError {
	if f == nil {
		return nil
	}
	pointer := ptrOptions + "/response_format"
	if err := oneOf(f.Type, pointer+"/type", true, "text", "json_object", "json_schema"); err != nil {
		return err
	}
	if f.Type != "json_schema" {
		if f.JSONSchema != nil {
			return invalid(pointer+"/json_schema", "is only for type json_schema")
		}
		return nil
	}
	if f.JSONSchema == nil {
		return invalid(pointer+"/json_schema", "is required when type is json_schema")
	}
	if err := required(f.JSONSchema.Name, pointer+"/json_schema/name"); err != nil {
		return err
	}
	if _, err := compileSchema(f.JSONSchema.Schema); err != nil {
		return invalid(pointer+"/json_schema/schema", "is not a JSON schema (draft 2020-12) the gateway can check: %s", oneLine(err))
	}
	return nil
}

// ErrOutputInvalid is an answer that is not what response_format asks.
var ErrOutputInvalid = errors.New("the answer does not match response_format")

// CheckOutput reports whether content is what f asks for: any text, a
// JSON object, or JSON matching the schema; an error wrapping
// ErrOutputInvalid says why not.
func (f *LLMResponseFormat) CheckOutput(content string) error {
	if f == nil || f.Type == "text" || f.Type == "" {
		return nil
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(content))
	if err != nil {
		return fmt.Errorf("%w: not JSON: %v", ErrOutputInvalid, err)
	}
	if f.Type == "json_object" {
		if _, ok := doc.(map[string]any); !ok {
			return fmt.Errorf("%w: JSON, but not an object", ErrOutputInvalid)
		}
		return nil
	}
	schema, err := compileSchema(f.JSONSchema.Schema)
	if err != nil {
		return err
	}
	if err := schema.Validate(doc); err != nil {
		return fmt.Errorf("%w: %s", ErrOutputInvalid, oneLine(err))
	}
	return nil
}

// compileSchema compiles a schema that refers to nothing outside it: no
// schema is loaded from a URL or a file.
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, errors.New("a schema is a JSON object")
	}
	branches := 0
	if err := boundSchema(doc, 0, &branches); err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	const url = "urn:llm-task:response-format"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// noLoader refuses every schema reference outside the schema itself.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("a schema may not refer to %s", url)
}

// oneLine is err's message on one line, at most 500 bytes: the schema
// library's errors list their causes line by line.
func oneLine(err error) string {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	return msg
}

// Bounds of a response_format schema, so that checking an answer against
// it takes little time whatever the schema: without references its
// checks are a tree, and the alternatives along it multiply.
const (
	maxSchemaDepth    = 32
	maxSchemaBranches = 24
)

// boundSchema refuses, in the schema document v at depth, a reference
// (a schema may refer to itself, and a chain of alternatives between
// references takes time exponential in its length), nesting deeper than
// maxSchemaDepth, and more than maxSchemaBranches alternatives (anyOf,
// oneOf, allOf) in all, counted in *branches.
func boundSchema(v any, depth int, branches *int) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("it nests deeper than %d levels", maxSchemaDepth)
	}
	switch v := v.(type) {
	case map[string]any:
		for key, member := range v {
			switch key {
			case "$ref", "$dynamicRef", "$recursiveRef":
				return fmt.Errorf("it uses %s: inline the definitions it refers to", key)
			case "anyOf", "oneOf", "allOf":
				if list, ok := member.([]any); ok {
					*branches += len(list)
				}
				if *branches > maxSchemaBranches {
					return fmt.Errorf("it has more than %d alternatives (anyOf, oneOf, allOf) in all", maxSchemaBranches)
				}
			}
			if err := boundSchema(member, depth+1, branches); err != nil {
				return err
			}
		}
	case []any:
		for _, member := range v {
			if err := boundSchema(member, depth+1, branches); err != nil {
				return err
			}
		}
	}
	return nil
}
