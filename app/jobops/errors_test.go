package jobops_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/app/jobops"
)

// A refusal carries its status, code and message for the client, so the
// API and a batch file's reader answer it alike (docs/api.md, Errors).
func TestRefusalsCarryTheirStatusAndCode(t *testing.T) {
	t.Parallel()
	budget := &jobops.Error{Kind: jobops.ErrBudgetExceeded, Message: "the monthly budget is spent"}
	require.Equal(t, 402, budget.Status())
	require.Equal(t, "BUDGET_EXCEEDED", budget.Code())
	require.Equal(t, "the monthly budget is spent", budget.ClientMessage())

	provider := &jobops.Error{Kind: jobops.ErrUnknownProvider, Pointer: "/provider", Message: "no provider named x"}
	require.Equal(t, 422, provider.Status())
	require.Equal(t, "UNKNOWN_PROVIDER", provider.Code())
	require.Equal(t, "/data/attributes/provider: no provider named x", provider.ClientMessage())

	other := &jobops.Error{Kind: errors.New("not a refusal")}
	require.Zero(t, other.Status())
	require.Empty(t, other.Code())
}
