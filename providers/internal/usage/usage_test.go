package usage_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/internal/usage"
)

func TestCost(t *testing.T) {
	t.Parallel()

	m := usage.Metered{Minutes: 2.5, Characters: 1000, Pages: 3, Tokens: 1500}
	tests := []struct {
		unit string
		want float64
	}{
		{providers.PerMinute, 0.015},
		{providers.PerCharacter, 6},
		{providers.PerPage, 0.018},
		{providers.PerRequest, 0.006},
		{providers.PerToken, 9},
		{"per_fortnight", 0},
	}
	for _, tt := range tests {
		got := usage.Cost(providers.Pricing{Unit: tt.unit, Amount: 0.006, Currency: "USD"}, m)
		require.Equal(t, tt.want, got, tt.unit) // exact: float noise is rounded away
	}
}

func TestEstimateTokens(t *testing.T) {
	t.Parallel()

	require.Equal(t, 0, usage.EstimateTokens(""))
	require.Equal(t, 1, usage.EstimateTokens("abc"))
	require.Equal(t, 2, usage.EstimateTokens("wörld"), "counts characters, not bytes")
}

func TestNew(t *testing.T) {
	t.Parallel()

	u := usage.New(-1, 7, 0.5)
	require.Nil(t, u.InputTokens)
	require.Equal(t, 7, *u.OutputTokens)
	require.Equal(t, 0.5, *u.Cost)
}
