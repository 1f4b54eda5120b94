package jobs

import (
	"encoding/json"
	"errors"
)

// DefaultOutputTokens is the answer an llm-task's estimate allows for.
const DefaultOutputTokens = 1024

// EstimateUsage is a job's usage as far as it is known before it runs
// (docs/api.md, Budgets): known is false when it depends on media not
// probed yet (mediaSeconds nil) or on a document not read yet. An
// llm-task's answer is its options' max_tokens (options may be nil), else
// DefaultOutputTokens.
func EstimateUsage(service ServiceID, input, options json.RawMessage, mediaSeconds *float64) (n NativeUsage, known bool) {
	// What the input alone measures, as a finished job is measured:
	// characters of a text, a prompt at four characters a token.
	n, _ = MeasureUsage(service, input, nil)
	svc, _ := ServiceOf(service)
	switch svc.Usage {
	case UsageAudioSeconds, UsageVideoSeconds:
		if mediaSeconds == nil {
			return NativeUsage{}, false
		}
		s := *mediaSeconds
		n.MediaSeconds = &s
	case UsageCharacters:
		if n.Characters == nil {
			return n, false // a document, not read yet
		}
	case UsageTokens:
		output := int64(DefaultOutputTokens)
		var opts struct {
			MaxTokens *int `json:"max_tokens"`
		}
		if json.Unmarshal(options, &opts) == nil && opts.MaxTokens != nil && *opts.MaxTokens > 0 {
			output = int64(*opts.MaxTokens)
		}
		n.OutputTokens = &output
	default:
		return n, false
	}
	return n, true
}

// Reservation is a job's estimate to hold against its tenant's budgets
// that cover its application and API key (docs/api.md, Budgets).
type Reservation struct {
	JobID       string
	Application string
	// APIKey is the id of the API key that created the job (CallerKey),
	// "" for none.
	APIKey  string
	Service ServiceID
	// Provider is the provider the job names, if any.
	Provider string
	Usage    NativeUsage
	// Known says Usage is an estimate; else the job reserves nothing and
	// is only refused by a budget already used up.
	Known bool
	// TokensPerMinute is the tokens_per_minute of the job's API key (0:
	// none), a budget of its own for llm-tasks.
	TokensPerMinute int
}

// ErrBudgetExceeded is a reservation one of the tenant's budgets refuses;
// the budgets' own error, which says which budget, matches it with
// errors.Is.
var ErrBudgetExceeded = errors.New("the job's estimate does not fit a budget")
