package jobs

// The request and result shapes of each service (docs/api.md, Jobs). The
// API validates requests into these types; adapters read them and
// produce the results.

// Usage is what a provider reports it consumed.
type Usage struct {
	InputTokens  *int     `json:"input_tokens,omitempty"`
	OutputTokens *int     `json:"output_tokens,omitempty"`
	Cost         *float64 `json:"cost,omitempty"`
}
