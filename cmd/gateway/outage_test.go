package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/store/storetest"
)

// TestDatabaseOutageWithJobsRunning cuts PostgreSQL away from a running
// gateway: creates answer 503 with Retry-After meanwhile, the running job
// goes on, and its projection writes land once the database is back
// (docs/reliability.md, Faults).
func TestDatabaseOutageWithJobsRunning(t *testing.T) {
	t.Parallel()
	link, databaseURL := storetest.FreshPostgresURLThroughLink(t)
	g := newGateway(t, databaseURL, "--providers", writeCatalog(t, slowCatalog))
	body := llmTaskBody
	id := g.create("llm-tasks", body).Data.ID
	g.waitFor("llm-tasks", id, 30*time.Second, func(d jobDoc) bool { return d.Data.Attributes.Status == "processing" })

	link.SetCut(true)
	status, answer, header := g.do(http.MethodPost, "/v1/llm-tasks", body)
	require.Equal(t, http.StatusServiceUnavailable, status, "%s", answer)
	require.Equal(t, "5", header.Get("Retry-After"))
	// Longer than the sandbox call: the job finishes its call meanwhile,
	// and its last projection write waits for the database.
	time.Sleep(10 * time.Second)
	link.SetCut(false)

	done := g.waitEnded("llm-tasks", id, 90*time.Second, "completed")
	require.NotEmpty(t, done.Data.Attributes.Result)
	g.create("llm-tasks", body) // and creates are accepted again
}
