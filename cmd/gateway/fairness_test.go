package main

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestJobsCarryTheirTenantsFairness: a job's workflow is started with its
// tenant as fairness key and the tenant's weight, on the embedded server,
// which has fairness on (docs/operations.md, Fairness between tenants).
func TestJobsCarryTheirTenantsFairness(t *testing.T) {
	t.Parallel()
	g := newGateway(t, "")
	out, err := exec.Command(gatewayBin, "token", "--data-dir", g.dataDir, "--tenant", "acme", "--sub", "ops",
		"--scope", "llm-tasks:read", "--super-admin").Output()
	require.NoError(t, err)
	admin := strings.TrimSpace(string(out))
	status, body, _ := g.do(http.MethodPost, "/v1/tenants",
		`{"data":{"type":"tenant","id":"acme","attributes":{"fairness_weight":2.5}}}`, "Authorization", "Bearer "+admin)
	require.Equal(t, http.StatusCreated, status, string(body))
	require.Contains(t, string(body), `"fairness_weight":2.5`)

	id := g.create("llm-tasks", llmTaskBody).Data.ID
	g.waitEnded("llm-tasks", id, 60*time.Second, "completed")
	events := historyOf(context.Background(), t, temporalClient(t, g.temporal), id)
	priority := events[0].GetWorkflowExecutionStartedEventAttributes().GetPriority()
	require.Equal(t, "acme", priority.GetFairnessKey())
	require.InDelta(t, 2.5, priority.GetFairnessWeight(), 1e-6)
	require.EqualValues(t, 3, priority.GetPriorityKey(), "standard priority")
}
