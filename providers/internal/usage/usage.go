// Package usage estimates and prices what a provider call consumed.
package usage

import (
	"math"
	"unicode/utf8"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// Metered is what one call consumed, in every unit a price can be given in.
type Metered struct {
	Minutes    float64
	Characters int
	Pages      int
	Tokens     int
}

// Cost prices m in p's unit; per_request counts one request.
func Cost(p providers.Pricing, m Metered) float64 {
	var q float64
	switch p.Unit {
	case providers.PerMinute:
		q = m.Minutes
	case providers.PerCharacter:
		q = float64(m.Characters)
	case providers.PerPage:
		q = float64(m.Pages)
	case providers.PerRequest:
		q = 1
	case providers.PerToken:
		q = float64(m.Tokens)
	}
	// Round away float noise such as 0.015000000000000001.
	return math.Round(p.Amount*q*1e9) / 1e9
}

// EstimateTokens approximates the tokens of text at four characters a token.
func EstimateTokens(text string) int {
	return (utf8.RuneCountInString(text) + 3) / 4
}

// New builds a usage object; negative token counts are left out.
func New(inputTokens, outputTokens int, cost float64) *jobs.Usage {
	u := &jobs.Usage{Cost: &cost}
	if inputTokens >= 0 {
		u.InputTokens = &inputTokens
	}
	if outputTokens >= 0 {
		u.OutputTokens = &outputTokens
	}
	return u
}
