package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// jobsDataDir is a data dir whose SQLite store holds records, for the
// jobs commands that need no Temporal.
func jobsDataDir(t *testing.T, records ...jobs.Record) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "gateway.db"))
	require.NoError(t, err)
	require.NoError(t, st.Migrate(ctx))
	for i := range records {
		require.NoError(t, st.Jobs.SaveJob(ctx, &records[i]))
	}
	require.NoError(t, st.Close())
	return dir
}

// failedJob is a failed job created at minute i of a fixed hour.
func failedJob(i int, code string) jobs.Record {
	created := time.Date(2026, 11, 24, 10, i, 0, 0, time.UTC)
	return jobs.Record{
		ID: uuid.Must(uuid.NewV7()).String(), Service: "llm-tasks", Tenant: "acme", UserID: "sre",
		Status: jobs.StatusFailed, ErrorCode: code, ErrorMessage: "it failed", CreatedAt: created,
		RoutingHistory: `[]`,
	}
}

// runJobsCommand runs `gateway jobs` against dir's store, with a Temporal
// address nothing listens on: these commands must not need it.
func runJobsCommand(dir string, args ...string) (code int, stdout, stderr string) {
	full := append([]string{"jobs", args[0], "--data-dir", dir, "--temporal-address", "127.0.0.1:1"}, args[1:]...)
	var out, errOut bytes.Buffer
	code = run(full, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestJobsListJSON(t *testing.T) {
	t.Parallel()
	older, newer := failedJob(1, "PROVIDERS_EXHAUSTED"), failedJob(2, "NO_ELIGIBLE_PROVIDER")
	processed := older.CreatedAt.Add(time.Second)
	older.Provider, older.ProcessedAt, older.CompletedAt = "openai", &processed, &processed
	dir := jobsDataDir(t, older, newer)

	code, stdout, stderr := runJobsCommand(dir, "list", "-o", "json")
	require.Equal(t, 0, code, stderr)
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &list), stdout)
	require.Len(t, list, 2)
	require.Equal(t, map[string]any{
		"id": older.ID, "service": "llm-tasks", "tenant": "acme", "user_id": "sre", "status": "failed",
		"progress": float64(0), "provider": "openai", "error_code": "PROVIDERS_EXHAUSTED", "error_message": "it failed",
		"created_at": "2026-11-24T10:01:00Z", "processed_at": "2026-11-24T10:01:01Z", "completed_at": "2026-11-24T10:01:01Z",
	}, list[1], "stable names; what does not apply is left out")
	require.Equal(t, newer.ID, list[0]["id"], "newest first")
	require.NotContains(t, list[0], "provider")

	code, stdout, _ = runJobsCommand(dir, "list", "--output", "json", "--error-code", "NO_ELIGIBLE_PROVIDER")
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(stdout), &list))
	require.Len(t, list, 1)
	require.Equal(t, newer.ID, list[0]["id"])

	code, stdout, _ = runJobsCommand(dir, "list", "--tenant", "nobody", "-o", "json")
	require.Equal(t, 0, code)
	require.Equal(t, "[]\n", stdout, "an empty array, not null")

	code, stdout, _ = runJobsCommand(dir, "list")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "ID  ")
	require.Contains(t, stdout, "2 of 2 matching jobs")

	code, _, stderr = runJobsCommand(dir, "list", "-o", "yaml")
	require.Equal(t, 2, code, "a usage mistake")
	require.Contains(t, stderr, `-o "yaml": use text or json`)
}

func TestJobsShowOutput(t *testing.T) {
	t.Parallel()
	decided := time.Date(2026, 11, 24, 10, 1, 2, 0, time.UTC)
	d := jobDetailJSON{
		jobJSON: newJobJSON(&jobs.Record{
			ID: "01936f2a-0000-7000-8000-000000000001", Service: "llm-tasks", Tenant: "acme", UserID: "sre",
			Status: jobs.StatusCompleted, Progress: 100, Provider: "openai", CreatedAt: decided.Add(-time.Second),
		}),
		RoutingHistory: []jobs.RoutingInfo{{ProviderID: "openai", Reason: "default", Attempt: 1, DecidedAt: decided, ProviderEvaluations: []jobs.Evaluation{}}},
		Workflow:       &workflowJSON{Events: 12, Steps: []workflowStepJSON{{EventID: 5, Time: decided, Summary: "route"}}},
	}
	var out bytes.Buffer
	require.NoError(t, writeJobDetail(&out, d, "json"))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), out.String())
	require.Equal(t, "01936f2a-0000-7000-8000-000000000001", doc["id"])
	require.Equal(t, "completed", doc["status"])
	require.Equal(t, float64(100), doc["progress"])
	require.Equal(t, []any{map[string]any{
		"provider_id": "openai", "reason": "default", "attempt": float64(1), "decided_at": "2026-11-24T10:01:02Z",
		"provider_evaluations": []any{},
	}}, doc["routing_history"], "as the API's routing_history")
	require.Equal(t, map[string]any{"events": float64(12), "steps": []any{
		map[string]any{"event_id": float64(5), "time": "2026-11-24T10:01:02Z", "summary": "route"},
	}}, doc["workflow"])

	d.Workflow = nil
	out.Reset()
	require.NoError(t, writeJobDetail(&out, d, "json"))
	require.Contains(t, out.String(), `"workflow": null`)
	out.Reset()
	require.NoError(t, writeJobDetail(&out, d, "text"))
	require.Contains(t, out.String(), "status    completed\n")
	require.Contains(t, out.String(), "attempt 1  openai")
	require.Contains(t, out.String(), "workflow  none in Temporal")
}

// TestJobsUnknownIDs: an id the store does not have is named on stderr and
// the command exits 1 (a retry of one used to exit 0).
func TestJobsUnknownIDs(t *testing.T) {
	t.Parallel()
	dir := jobsDataDir(t, failedJob(1, "PROVIDERS_EXHAUSTED"))
	missing := uuid.Must(uuid.NewV7()).String()
	for _, args := range [][]string{
		{"show", missing},
		{"show", missing, "-o", "json"},
		{"retry", missing},
		{"retry", missing, "--dry-run"},
		{"cancel", missing},
	} {
		code, stdout, stderr := runJobsCommand(dir, args...)
		require.Equal(t, 1, code, "%v: %s", args, stderr)
		require.Contains(t, stderr, "job "+missing+" not found", args)
		require.NotContains(t, stdout, missing, args)
		require.NotContains(t, stderr, "127.0.0.1:1", "%v: nothing to do in Temporal", args)
	}
}

// TestJobsRetryFiltersBeforeTheLimit: --limit counts the jobs with the
// error code asked, not the newest failed jobs of any code.
func TestJobsRetryFiltersBeforeTheLimit(t *testing.T) {
	t.Parallel()
	var records []jobs.Record
	for i := range 6 {
		code := "PROVIDERS_EXHAUSTED"
		if i < 2 {
			code = "NO_ELIGIBLE_PROVIDER" // the two oldest
		}
		records = append(records, failedJob(i, code))
	}
	dir := jobsDataDir(t, records...)
	code, stdout, stderr := runJobsCommand(dir, "retry", "--error-code", "NO_ELIGIBLE_PROVIDER", "--limit", "1", "--dry-run")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, records[1].ID+"  would retry (llm-tasks, failed: NO_ELIGIBLE_PROVIDER)")
	require.Contains(t, stdout, "1 jobs would be retried")

	code, stdout, _ = runJobsCommand(dir, "retry", "--error-code", "NO_ELIGIBLE_PROVIDER", "--dry-run")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "2 jobs would be retried")
	require.NotContains(t, stdout, "PROVIDERS_EXHAUSTED")

	code, stdout, _ = runJobsCommand(dir, "retry", "--error-code", "UNKNOWN_CODE")
	require.Equal(t, 0, code, "nothing to retry needs no Temporal")
	require.Equal(t, "0 retried, 0 not\n", stdout)
}

type fakeRetrier struct{ fail map[string]bool }

func (f fakeRetrier) Retry(_ context.Context, job *jobs.Record) (*jobs.Record, error) {
	if f.fail[job.ID] {
		return nil, errors.New("only failed jobs are retried")
	}
	return job, nil
}

func TestRetryProgress(t *testing.T) {
	t.Parallel()
	var targets []jobs.Record
	for i := range 4 {
		targets = append(targets, failedJob(i, "PROVIDERS_EXHAUSTED"))
	}
	ops := fakeRetrier{fail: map[string]bool{targets[2].ID: true}}

	// On a terminal: one line redrawn in place, a second per job.
	var stdout, term bytes.Buffer
	start := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	p := &progress{w: &term, total: len(targets), start: start}
	p.now = func() time.Time { return start.Add(time.Duration(p.done) * time.Second) } // a job a second
	retried, failed, err := retryEach(context.Background(), ops, targets, 1000, &stdout, p)
	require.NoError(t, err)
	require.Equal(t, 3, retried)
	require.Equal(t, 1, failed)
	require.Equal(t, 4, strings.Count(stdout.String(), "\n"), "a line per job on stdout, without the progress")
	require.NotContains(t, stdout.String(), "\r")
	drawn := term.String()
	require.Contains(t, drawn, "\r\033[Kretrying: 0/4 done\r\033[K")
	require.Contains(t, drawn, "retrying: 1/4 done, 1.0/s, ETA 3s")
	require.Contains(t, drawn, "retrying: 2/4 done, 1.0/s, ETA 2s")
	require.True(t, strings.HasSuffix(drawn, "retrying: 4/4 done, 1.0/s, ETA 0s\n"), "%q", drawn)

	// Anything but a terminal gets nothing extra.
	var buffer bytes.Buffer
	p = newProgress(&buffer, len(targets))
	stdout.Reset()
	_, _, err = retryEach(context.Background(), ops, targets, 1000, &stdout, p)
	require.NoError(t, err)
	require.Empty(t, buffer.String())
	require.Equal(t, 4, strings.Count(stdout.String(), "\n"))

	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	require.False(t, isTerminal(w), "a pipe")
	file, err := os.Create(filepath.Join(t.TempDir(), "stderr.log"))
	require.NoError(t, err)
	defer file.Close()
	require.False(t, isTerminal(file), "a file")
	require.Nil(t, newProgress(file, 3).w)
}
