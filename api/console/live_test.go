package console_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// The job page's live status reads the job's event stream through the
// console, as the session: events pass as they come, and the stream ends
// with the job.
func TestJobEventsPassThroughTheConsole(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	key, _ := h.key(t, "acme")
	b := h.browser(t)
	b.signIn(key)
	now := time.Now().UTC()
	job := h.seed(t, jobs.Record{Tenant: "acme", Status: jobs.StatusProcessing, Provider: "alpha", ProcessedAt: &now,
		Routing: `{"provider_id":"alpha","reason":"explicit_choice","attempt":1,"decided_at":"2025-03-04T05:06:09Z"}`})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.server.URL+"/console/jobs/"+job.ID+"/events?service=translations", nil)
	require.NoError(t, err)
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	requireSecurityHeaders(t, resp.Header)

	lines := bufio.NewScanner(resp.Body)
	next := func() string {
		for lines.Scan() {
			if name, ok := strings.CutPrefix(lines.Text(), "event: "); ok {
				return name
			}
		}
		return ""
	}
	require.Equal(t, "translation.progress", next(), "the job's events so far, at once")
	job.Status, job.Progress, job.Revision, job.CompletedAt = jobs.StatusCompleted, 100, 2, &now
	job.Result = `{"source_language":"en","target_language":"de","content":"Hallo","character_count":5}`
	require.NoError(t, h.store.Jobs.SaveJob(context.Background(), &job))
	require.Equal(t, "translation.completed", next(), "then each new one as it comes")
	require.Equal(t, "", next(), "the stream ends with the job")

	other := h.seed(t, jobs.Record{Tenant: "globex"})
	resp, err = b.client.Get(h.server.URL + "/console/jobs/" + other.ID + "/events?service=translations")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "another tenant's job")

	signedOut := h.browser(t)
	resp, err = signedOut.client.Get(h.server.URL + "/console/jobs/" + job.ID + "/events?service=translations")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "no session: sent to sign in")
}
