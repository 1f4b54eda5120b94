package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// typeScriptSDKDir is the TypeScript SDK, from this package's folder
// (clients/typescript/README.md).
const typeScriptSDKDir = "../../clients/typescript"

// requireNode returns the paths of node and npm, and skips the test when
// either is missing, unless GATEWAY_REQUIRE_NODE=1 (CI), which fails it.
func requireNode(t *testing.T) (node, npm string) {
	t.Helper()
	node, errNode := exec.LookPath("node")
	npm, errNPM := exec.LookPath("npm")
	if err := errors.Join(errNode, errNPM); err != nil {
		if os.Getenv("GATEWAY_REQUIRE_NODE") == "1" {
			t.Fatalf("GATEWAY_REQUIRE_NODE=1 but Node.js is missing: %v", err)
		}
		t.Skipf("this test needs node and npm: %v", err)
	}
	return node, npm
}

// buildTypeScriptSDK copies the SDK's sources into a folder of the test's
// own, installs its locked dependencies (npm ci), compiles it (tsc to
// dist/) and type-checks its tests, and returns the folder.
func buildTypeScriptSDK(t *testing.T, node, npm string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, filepath.WalkDir(typeScriptSDKDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(typeScriptSDKDir, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel == "node_modules" || rel == "dist" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), raw, 0o644)
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tsc := filepath.Join("node_modules", "typescript", "bin", "tsc")
	for _, step := range [][]string{
		{npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"},
		{node, tsc, "-p", "tsconfig.json"},
		{node, tsc, "-p", "tsconfig.test.json"},
	} {
		cmd := exec.CommandContext(ctx, step[0], step[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(step, " "), err, out)
		}
	}
	require.FileExists(t, filepath.Join(dir, "dist", "index.js"))
	require.FileExists(t, filepath.Join(dir, "dist", "index.d.ts"))
	return dir
}

// nodeTestSummary is the closing count of node --test.
var nodeTestSummary = regexp.MustCompile(`(?m)^# (pass|fail) (\d+)$`)

// TestTypeScriptSDK: the TypeScript SDK (clients/typescript) builds from
// its lock file, its unit tests pass, and against gateway dev it creates
// an llm-task, waits for it and reads its result, follows a translation's
// event stream and replays it after its first event, runs a batch to its
// end, gets a refusal's error.pointer, and verifies every webhook the
// gateway sent it with the published key, refusing a tampered body and a
// stale timestamp (docs/webhooks.md, Signatures).
func TestTypeScriptSDK(t *testing.T) {
	node, npm := requireNode(t)
	t.Parallel()
	sdk := buildTypeScriptSDK(t, node, npm)

	unit := exec.Command(node, "--test", "--test-timeout=60000", "test/")
	unit.Dir = sdk
	out, err := unit.CombinedOutput()
	require.NoError(t, err, "node --test:\n%s", out)
	counts := map[string]int{}
	for _, m := range nodeTestSummary.FindAllStringSubmatch(string(out), -1) {
		counts[m[1]], _ = strconv.Atoi(m[2])
	}
	require.Positive(t, counts["pass"], "node --test ran no test:\n%s", out)
	require.Zero(t, counts["fail"], "%s", out)

	g := newGateway(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, node, "e2e/gateway.mjs", g.url(""), g.token)
	run.Dir = sdk
	out, err = run.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("node e2e/gateway.mjs: %v\n%s", err, exit.Stderr)
	}
	require.NoError(t, err)

	type webhook struct {
		Verified bool   `json:"verified"`
		ID       string `json:"id"`
	}
	var got struct {
		Job struct {
			ID, CreatedStatus, Status, Content, Finish string
		} `json:"job"`
		Webhook struct {
			webhook
			Event           string `json:"event"`
			JobID           string `json:"jobId"`
			Status          string `json:"status"`
			ReceiverHeader  string `json:"receiverHeader"`
			TamperedChanged bool   `json:"tamperedChanged"`
			Tampered        string `json:"tampered"`
			Stale           string `json:"stale"`
		} `json:"webhook"`
		Events struct {
			JobID string `json:"jobId"`
			Live  []struct {
				ID, Event, Status, JobID string
			} `json:"live"`
			Replayed []string `json:"replayed"`
		} `json:"events"`
		Batch struct {
			ID      string         `json:"id"`
			Status  string         `json:"status"`
			Counts  map[string]int `json:"counts"`
			Results []struct {
				CustomID string `json:"custom_id"`
				Status   string `json:"status"`
				Content  string `json:"content"`
			} `json:"results"`
			Webhook struct {
				webhook
				BatchID string `json:"batchId"`
			} `json:"webhook"`
		} `json:"batch"`
		Refused struct {
			Status    int    `json:"status"`
			Code      string `json:"code"`
			Pointer   string `json:"pointer"`
			RequestID string `json:"requestId"`
		} `json:"refused"`
		Missing struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
		} `json:"missing"`
		Unverified int `json:"unverified"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)

	// The job: created pending, completed with its answer.
	require.Equal(t, "pending", got.Job.CreatedStatus)
	require.Equal(t, "completed", got.Job.Status)
	require.NotEmpty(t, got.Job.Content)
	require.Equal(t, "completed", got.Job.Finish)
	require.Equal(t, "completed", g.get("llm-tasks", got.Job.ID).Data.Attributes.Status)

	// Its webhook verified; the tampered and the stale copies did not.
	require.True(t, got.Webhook.Verified, "%s", out)
	require.True(t, strings.HasPrefix(got.Webhook.ID, got.Job.ID+"-"), got.Webhook.ID)
	require.Equal(t, "llm-task.completed", got.Webhook.Event)
	require.Equal(t, got.Job.ID, got.Webhook.JobID)
	require.Equal(t, "completed", got.Webhook.Status)
	require.Equal(t, "sdk-test", got.Webhook.ReceiverHeader)
	require.True(t, got.Webhook.TamperedChanged)
	require.Equal(t, "no_valid_signature", got.Webhook.Tampered)
	require.Equal(t, "timestamp_too_old", got.Webhook.Stale)

	// The event stream: numbered from 1, one job's, ending at its
	// terminal event; the replay after the first sends the rest.
	live := got.Events.Live
	require.NotEmpty(t, live)
	var ids []string
	for i, e := range live {
		require.Equal(t, strconv.Itoa(i+1), e.ID)
		require.Equal(t, got.Events.JobID, e.JobID)
		ids = append(ids, e.ID)
	}
	require.Equal(t, "translation.completed", live[len(live)-1].Event)
	require.Equal(t, "completed", live[len(live)-1].Status)
	require.Equal(t, ids[1:], append([]string{}, got.Events.Replayed...))
	require.Equal(t, "completed", g.get("translations", got.Events.JobID).Data.Attributes.Status)

	// The batch: both jobs completed, their results, and batch.completed.
	require.Equal(t, "completed", got.Batch.Status)
	require.Equal(t, 2, got.Batch.Counts["total"])
	require.Equal(t, 2, got.Batch.Counts["completed"])
	require.Len(t, got.Batch.Results, 2)
	for _, r := range got.Batch.Results {
		require.Equal(t, "completed", r.Status, r.CustomID)
		require.NotEmpty(t, r.Content, r.CustomID)
	}
	require.True(t, got.Batch.Webhook.Verified)
	require.Equal(t, "msg_batch_"+got.Batch.ID, got.Batch.Webhook.ID)
	require.Equal(t, got.Batch.ID, got.Batch.Webhook.BatchID)

	// The refusal's error object names the member at fault.
	require.Equal(t, 422, got.Refused.Status)
	require.Equal(t, "VALIDATION_ERROR", got.Refused.Code)
	require.Equal(t, "/data/attributes/input/url", got.Refused.Pointer)
	require.NotEmpty(t, got.Refused.RequestID)
	require.Equal(t, 404, got.Missing.Status)
	require.Equal(t, "NOT_FOUND", got.Missing.Code)

	require.Zero(t, got.Unverified, "every webhook the gateway sent verifies")
}
