package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/ai-job-gateway/gateway/internal/faultnet"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// process is a `gateway serve` or `gateway worker` of its own.
type process struct {
	listen string
	cmd    *exec.Cmd
	logs   *bytes.Buffer
}

// startProcess runs the gateway with args and env until the test ends,
// once its /readyz answers 200.
func startProcess(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	p := &process{listen: freeAddr(t), logs: &bytes.Buffer{}}
	p.cmd = exec.Command(gatewayBin, append(args, "--listen", p.listen)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	require.NoError(t, p.cmd.Start())
	exited := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-exited
		}
		requireNoKeyLogged(t, p.logs.String())
		if t.Failed() {
			t.Logf("gateway %s output:\n%s", args[0], p.logs.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + p.listen + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-exited:
			t.Fatalf("gateway %s exited:\n%s", args[0], p.logs.String())
		case <-time.After(200 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "gateway %s not ready:\n%s", args[0], p.logs.String())
	}
}

// productionShape is the gateway as production runs it, on one machine:
// a Temporal server (gateway dev's, on SQLite), and serve and worker as
// processes of their own, on PostgreSQL.
type productionShape struct {
	server   *gateway // its Temporal server; its dev identity provider signs the tokens
	api      *process
	worker   *process
	temporal string
	env      []string
	worker0  []string // the worker's arguments, to start another
}

// startProductionShape starts the shape; jobStarts is serve's --job-starts.
func startProductionShape(t *testing.T, catalogYAML, jobStarts string) *productionShape {
	t.Helper()
	databaseURL := storetest.FreshPostgresURL(t)
	return startShapeOn(t, catalogYAML, jobStarts, databaseURL, databaseURL, nil)
}

// startProductionShapeWithBlobs is the shape with a blob store (an S3
// fake) for serve and the worker, so that jobs with media run.
func startProductionShapeWithBlobs(t *testing.T, catalogYAML, jobStarts string) *productionShape {
	t.Helper()
	databaseURL := storetest.FreshPostgresURL(t)
	return startShapeOn(t, catalogYAML, jobStarts, databaseURL, databaseURL, fakeS3Bucket(t))
}

// startProductionShapeThroughLink is the shape with serve and the worker
// reaching PostgreSQL through a link the test can cut or hold (the
// Temporal server's gateway dev reaches it directly).
func startProductionShapeThroughLink(t *testing.T, catalogYAML, jobStarts string) (*productionShape, *faultnet.Link) {
	t.Helper()
	direct := storetest.FreshPostgresURL(t)
	link, linked := storetest.PostgresURLThroughLink(t, direct)
	return startShapeOn(t, catalogYAML, jobStarts, direct, linked, nil), link
}

// startShapeOn starts the shape: gateway dev on devURL, serve and the
// worker on processURL (the same database), with extraEnv.
func startShapeOn(t *testing.T, catalogYAML, jobStarts, devURL, processURL string, extraEnv []string) *productionShape {
	t.Helper()
	catalog := writeCatalog(t, catalogYAML)
	s := &productionShape{temporal: freeAddr(t)}
	// One set of payload keys for the three: any of them may run a job's
	// workflow or activities.
	keys := testPayloadKeys(t)
	s.server = newGatewayEnv(t, devURL, s.temporal, []string{keys}, "--providers", catalog)
	s.env = append([]string{"DATABASE_URL=" + processURL, "TEMPORAL_ADDRESS=" + s.temporal, "GATEWAY_ALLOW_PRIVATE_NETWORKS=true", keys}, extraEnv...)
	s.worker0 = []string{"worker", "--providers", catalog, "--data-dir", t.TempDir()}
	s.worker = startProcess(t, s.env, s.worker0...)
	s.api = startProcess(t, append(s.env, "OIDC_ISSUER_URL="+s.server.url("/dev/oidc")), "serve", "--providers", catalog, "--tenant-create-rate", "0", "--job-starts", jobStarts)
	return s
}

// restartWorker kills the worker with SIGKILL and starts another.
func (s *productionShape) restartWorker(t *testing.T) {
	t.Helper()
	require.NoError(t, s.worker.cmd.Process.Signal(syscall.SIGKILL))
	s.worker = startProcess(t, s.env, s.worker0...)
}

// TestTemporalRestartWithJobsInFlight: serve and worker run as processes
// of their own against a Temporal server (gateway dev's) and PostgreSQL;
// the Temporal server is killed and restarted while jobs run. Every job
// ends once, completed, in the store and in Temporal.
func TestTemporalRestartWithJobsInFlight(t *testing.T) {
	t.Parallel()
	// serve's default on PostgreSQL: the workers start the jobs, eagerly,
	// woken by notifications (docs/operations.md, Where jobs are started).
	shape := startProductionShape(t, slowCatalog, jobStartsAuto)
	server, api, temporalAddr := shape.server, shape.api, shape.temporal

	createTask := func() string {
		t.Helper()
		status, body := post(t, "http://"+api.listen+"/v1/llm-tasks", server.token,
			llmTaskBody)
		require.Equal(t, http.StatusAccepted, status, "%s", body)
		var doc jobDoc
		require.NoError(t, json.Unmarshal(body, &doc))
		return doc.Data.ID
	}
	var ids []string
	for range 6 {
		ids = append(ids, createTask())
	}
	require.Eventually(t, func() bool {
		return strings.Contains(string(get(t, "http://"+api.listen+"/v1/llm-tasks/"+ids[0], server.token)), `"processing"`)
	}, 30*time.Second, 100*time.Millisecond)

	// The Temporal server goes away with jobs in flight, and comes back.
	// Meanwhile serve stays ready (Temporal reported degraded) and accepts
	// jobs into its outbox (docs/operations.md, Health).
	// gateway dev, which hosts Temporal here, runs a worker on the same
	// store too: it may start a job before or after its restart.
	starters := []int{shape.worker.cmd.Process.Pid, server.cmd.Process.Pid}
	server.kill()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + api.listen + "/readyz")
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "serve stays ready while Temporal is away: %s", body)
		return strings.Contains(string(body), `"temporal":"degraded"`)
	}, 30*time.Second, 200*time.Millisecond)
	ids = append(ids, createTask()) // accepted while Temporal is away
	server.start()
	starters = append(starters, server.cmd.Process.Pid)

	tc := temporalClient(t, temporalAddr)
	for _, id := range ids {
		require.Eventually(t, func() bool {
			return strings.Contains(string(get(t, "http://"+api.listen+"/v1/llm-tasks/"+id, server.token)), `"completed"`)
		}, 120*time.Second, 250*time.Millisecond, "job %s", id)
		// The store's record is written by the workflow's last activity, so
		// the workflow itself completes a moment after it.
		require.Eventually(t, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			desc, err := tc.DescribeWorkflowExecution(ctx, id, "")
			return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		}, 30*time.Second, 100*time.Millisecond, "job %s in Temporal", id)
		// One run: the job ran once, not again after the restart.
		require.Eventually(t, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: "WorkflowId = '" + id + "'"})
			return err == nil && len(resp.GetExecutions()) == 1 &&
				resp.GetExecutions()[0].GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		}, 30*time.Second, 250*time.Millisecond, "job %s in Temporal's visibility", id)
		// Started by the worker process (its client's identity is
		// pid@host), not by serve.
		iter := tc.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		first, err := iter.Next()
		require.NoError(t, err)
		starter := first.GetWorkflowExecutionStartedEventAttributes().GetIdentity()
		require.False(t, strings.HasPrefix(starter, strconv.Itoa(api.cmd.Process.Pid)+"@"), "job %s started by serve", id)
		require.True(t, slices.ContainsFunc(starters, func(pid int) bool { return strings.HasPrefix(starter, strconv.Itoa(pid)+"@") }),
			"job %s started by %s, not by a process with a worker (pids %v)", id, starter, starters)
	}
}

func post(t *testing.T, url, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

func get(t *testing.T, url, token string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return data
}

// serve starts and accepts jobs while its Temporal cannot be reached (it
// connects lazily; the jobs wait in the outbox), but is not ready until
// Temporal has answered once (docs/operations.md, Health).
func TestServeStartsWithoutTemporal(t *testing.T) {
	t.Parallel()
	idp := newGateway(t, "") // its dev identity provider signs the token
	databaseURL := storetest.FreshPostgresURL(t)
	code, out := runGateway(t, []string{"DATABASE_URL=" + databaseURL}, "migrate") // the schema only
	require.Equal(t, 0, code, out)
	listen := freeAddr(t)
	cmd := exec.Command(gatewayBin, "serve", "--tenant-create-rate", "0", "--listen", listen)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+databaseURL, "TEMPORAL_ADDRESS="+freeAddr(t),
		"OIDC_ISSUER_URL="+idp.url("/dev/oidc"), "TEMPORAL_CONFIG_FILE="+filepath.Join(t.TempDir(), "none.toml"))
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + listen + "/readyz")
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), `"temporal":"unavailable"`)
	}, 60*time.Second, 200*time.Millisecond, "serve runs, not ready until Temporal answers once")
	status, answer := post(t, "http://"+listen+"/v1/llm-tasks", idp.token,
		llmTaskBody)
	require.Equal(t, http.StatusAccepted, status, "%s", answer)
}

// runGateway runs the gateway binary with args and env added to the
// test's environment, and returns its exit code and output.
func runGateway(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(gatewayBin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), string(out)
	}
	require.NoError(t, err)
	return 0, string(out)
}
