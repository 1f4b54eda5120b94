package devtemporal

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

const (
	taskQueue        = "devtemporal-test"
	signalName       = "go"
	restartWorkflow  = "devtemporal-restart"
	helperDBEnv      = "DEVTEMPORAL_TEST_HELPER_DB"
	greetWorkflowTyp = "greet"
	waitWorkflowTyp  = "wait-for-signal"
)

func greetWorkflow(_ workflow.Context, name string) (string, error) {
	return "hello " + name, nil
}

func waitForSignalWorkflow(ctx workflow.Context) (string, error) {
	var v string
	workflow.GetSignalChannel(ctx, signalName).Receive(ctx, &v)
	return "signalled " + v, nil
}

func testLogger() *slog.Logger {
	// Not t.Log: server goroutines may still log after a test has finished.
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func startServer(t *testing.T, opts Options) *Server {
	t.Helper()
	if opts.FrontendAddress == "" {
		opts.FrontendAddress = "127.0.0.1:0"
	}
	opts.Logger = testLogger()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	began := time.Now()
	s, err := Start(ctx, opts)
	require.NoError(t, err)
	t.Logf("Start took %s (db=%q frontend=%s ui=%q)", time.Since(began).Round(time.Millisecond),
		opts.DatabaseFile, s.FrontendAddress(), s.UIAddress())
	t.Cleanup(s.Stop)
	return s
}

func newClient(t *testing.T, s *Server) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  s.FrontendAddress(),
		Namespace: s.Namespace(),
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func startWorker(t *testing.T, c client.Client) worker.Worker {
	t.Helper()
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(greetWorkflow, workflow.RegisterOptions{Name: greetWorkflowTyp})
	w.RegisterWorkflowWithOptions(waitForSignalWorkflow, workflow.RegisterOptions{Name: waitWorkflowTyp})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return w
}

func runGreet(t *testing.T, c client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: taskQueue}, greetWorkflowTyp, "gateway")
	require.NoError(t, err)
	var out string
	require.NoError(t, run.Get(ctx, &out))
	require.Equal(t, "hello gateway", out)
}

func TestInMemoryWithUI(t *testing.T) {
	s := startServer(t, Options{UIAddress: "127.0.0.1:0"})
	require.Equal(t, DefaultNamespace, s.Namespace())
	require.NotEmpty(t, s.UIAddress())

	c := newClient(t, s)
	startWorker(t, c)
	runGreet(t, c)

	resp, err := http.Get("http://" + s.UIAddress() + "/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, strings.ToLower(string(body)), "<html")

	t.Logf("RSS after in-memory server + UI + workflow: %s", rss(t))

	s.Stop()
	s.Stop() // idempotent
	_, err = http.Get("http://" + s.UIAddress() + "/healthz")
	require.Error(t, err, "UI still serving after Stop")
}

func TestFileDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "temporal.db")
	s := startServer(t, Options{DatabaseFile: db, Namespace: "jobs"})
	require.Equal(t, "jobs", s.Namespace())
	require.Empty(t, s.UIAddress())
	_, err := os.Stat(db)
	require.NoError(t, err)

	_, err = Start(context.Background(), Options{DatabaseFile: db, FrontendAddress: "127.0.0.1:0", Logger: testLogger()})
	require.ErrorContains(t, err, "already used by a running server")

	c := newClient(t, s)
	startWorker(t, c)
	runGreet(t, c)

	// journal_mode=wal took effect: bytes 18 and 19 of the SQLite header
	// (file format write/read version) are 2 in WAL mode, 1 otherwise.
	f, err := os.Open(db)
	require.NoError(t, err)
	defer f.Close()
	header := make([]byte, 20)
	_, err = io.ReadFull(f, header)
	require.NoError(t, err)
	require.Equal(t, "SQLite format 3\x00", string(header[:16]))
	require.Equal(t, []byte{2, 2}, header[18:20], "database is not in WAL mode")
}

// TestRestartPersistence starts a workflow that waits for a signal in a
// separate process (a real process restart), then signals it from a server
// started on the same file in this process and waits for completion. It then
// restarts the server inside this process too and checks the result is still
// there and new workflows run.
func TestRestartPersistence(t *testing.T) {
	db := filepath.Join(t.TempDir(), "temporal.db")

	// Phase 1: other process.
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v")
	cmd.Env = append(os.Environ(), helperDBEnv+"="+db)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "helper process failed:\n%s", out)
	require.Contains(t, string(out), "HELPER-OK", "helper output:\n%s", out)

	// Phase 2: this process, same file.
	s := startServer(t, Options{DatabaseFile: db})
	c := newClient(t, s)
	startWorker(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	desc, err := c.DescribeWorkflowExecution(ctx, restartWorkflow, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.GetWorkflowExecutionInfo().GetStatus())
	require.NoError(t, c.SignalWorkflow(ctx, restartWorkflow, "", signalName, "after-restart"))
	var result string
	require.NoError(t, c.GetWorkflow(ctx, restartWorkflow, "").Get(ctx, &result))
	require.Equal(t, "signalled after-restart", result)

	// Phase 3: Stop and Start again on the same file in this process.
	s.Stop()
	s2 := startServer(t, Options{DatabaseFile: db})
	c2 := newClient(t, s2)
	desc, err = c2.DescribeWorkflowExecution(ctx, restartWorkflow, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())
	startWorker(t, c2)
	runGreet(t, c2)
	t.Logf("RSS after restarts: %s", rss(t))
}

// TestHelperProcess is phase 1 of TestRestartPersistence, run in a child
// process: start a server on the file, start the signal workflow, let a
// worker run its first workflow task, stop everything.
func TestHelperProcess(t *testing.T) {
	db := os.Getenv(helperDBEnv)
	if db == "" {
		t.Skip("helper for TestRestartPersistence")
	}
	s := startServer(t, Options{DatabaseFile: db})
	c := newClient(t, s)
	w := startWorker(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: restartWorkflow, TaskQueue: taskQueue}, waitWorkflowTyp)
	require.NoError(t, err)
	// Wait until the worker has completed the first workflow task, so the
	// workflow really is blocked on the signal when the server stops.
	for {
		var done bool
		iter := c.GetWorkflowHistory(ctx, restartWorkflow, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			require.NoError(t, err)
			if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
				done = true
			}
		}
		if done {
			break
		}
		require.NoError(t, ctx.Err())
		time.Sleep(50 * time.Millisecond)
	}
	w.Stop()
	c.Close()
	s.Stop()
	t.Log("HELPER-OK")
}

func TestPortConflict(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()

	_, err = Start(context.Background(), Options{FrontendAddress: ln.Addr().String(), Logger: testLogger()})
	require.ErrorContains(t, err, "not available")

	_, err = Start(context.Background(), Options{
		FrontendAddress: "127.0.0.1:0", UIAddress: ln.Addr().String(), Logger: testLogger(),
	})
	require.ErrorContains(t, err, "not available")

	_, err = Start(context.Background(), Options{FrontendAddress: "example.com:7233"})
	require.Error(t, err)
}

func TestResolveListenAddress(t *testing.T) {
	ip, port, err := resolveListenAddress("x", "localhost:0")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", ip)
	require.NotZero(t, port)
	ip, _, err = resolveListenAddress("x", ":0")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", ip)
	_, _, err = resolveListenAddress("x", "127.0.0.1")
	require.Error(t, err)
	require.Equal(t, "127.0.0.1", dialIP("0.0.0.0"))
	require.Equal(t, "::1", dialIP("::"))
	require.Equal(t, "10.0.0.1", dialIP("10.0.0.1"))
}

func rss(t *testing.T) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			fields := strings.Fields(v)
			if kb, err := strconv.Atoi(fields[0]); err == nil {
				return strconv.Itoa(kb/1024) + " MiB"
			}
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Log(err)
	}
	return "unknown"
}

func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	t.Parallel()
	for range 20 {
		port, err := FreePort("127.0.0.1")
		require.NoError(t, err)
		require.GreaterOrEqual(t, port, 20000)
		require.Less(t, port, 32768, "outgoing connections take local ports from 32768 up")
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		require.NoError(t, err, "the port is free")
		require.NoError(t, ln.Close())
	}
}
