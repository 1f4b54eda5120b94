package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/workflows"
)

// A short job of generation 3 or later (here the newest) is projected
// once, by its call's local activity: its document has every attribute of
// a completed job (docs/api.md), completed no earlier than it began
// processing.
func TestNewestGenerationShortJobDocument(t *testing.T) {
	t.Parallel()
	g := newGateway(t, "", "--providers", writeCatalog(t, "providers:\n"+sandboxLLMProvider("quick", "Quick", 0, 0, "0.000001")),
		"--job-generation", strconv.Itoa(workflows.Generation))
	id := g.create("llm-tasks", llmTaskBody).Data.ID
	done := g.waitEnded("llm-tasks", id, 30*time.Second, "completed").Data.Attributes

	require.Equal(t, "quick", done.Provider)
	require.NotNil(t, done.Progress)
	require.Equal(t, 100, *done.Progress)
	require.NotEmpty(t, done.Result)
	require.Nil(t, done.Error, "error only when failed")
	require.Equal(t, "quick", done.Routing["provider_id"])
	require.Len(t, done.RoutingHistory, 1)
	require.NotNil(t, done.ProcessedAt, "processing is in the one projection")
	require.NotNil(t, done.CompletedAt)
	require.False(t, done.CompletedAt.Before(*done.ProcessedAt), "completed %s before processing %s", done.CompletedAt, done.ProcessedAt)
}
