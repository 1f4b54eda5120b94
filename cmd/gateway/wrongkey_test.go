package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ai-job-gateway/gateway/cmd/gateway/internal/devtemporal"
	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
)

// keyedInput is the input of keyedEcho: a struct, so it is encrypted.
type keyedInput struct{ Text string }

// keyedEcho returns its input: a workflow whose first task decodes it.
func keyedEcho(_ workflow.Context, in keyedInput) (keyedInput, error) { return in, nil }

// TestWrongKeyWorkerFailsTheTaskNotTheWorkflow: a worker whose payload key
// differs from the client's cannot decode a new workflow's input; its
// workflow task fails (docs/operations.md, Payload encryption) and the
// workflow goes on running, so that a worker with the right key, started
// after, completes the same workflow.
func TestWrongKeyWorkerFailsTheTaskNotTheWorkflow(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs an embedded Temporal server")
	}
	require.Equal(t, worker.BlockWorkflow, workerOptions(config{}, "w").WorkflowPanicPolicy,
		"a panic in workflow code fails the task, not the workflow")

	ctx := context.Background()
	server, err := devtemporal.Start(ctx, devtemporal.Options{DatabaseFile: filepath.Join(t.TempDir(), "temporal.db"), FrontendAddress: "127.0.0.1:0"})
	require.NoError(t, err)
	t.Cleanup(server.Stop)

	secrets := payloadcodec.NewMemorySecrets(true) // the store's, shared by every process
	dial := func(key []byte) client.Client {
		ring, err := payloadcodec.NewKeyring("k1", map[string][]byte{"k1": key})
		require.NoError(t, err)
		enc := payloadcodec.New(ring, secrets, payloadcodec.Options{})
		dc := payloadcodec.DataConverter(converter.NewCodecDataConverter(converter.GetDefaultDataConverter(),
			enc.WorkflowCodec(func(context.Context, string) (string, error) { return "acme", nil })))
		tc, err := client.Dial(client.Options{HostPort: server.FrontendAddress(), Namespace: server.Namespace(), DataConverter: dc})
		require.NoError(t, err)
		t.Cleanup(tc.Close)
		return tc
	}
	poll := func(tc client.Client, queue, identity string) worker.Worker {
		w := worker.New(tc, queue, workerOptions(config{}, identity))
		w.RegisterWorkflowWithOptions(keyedEcho, workflow.RegisterOptions{Name: "KeyedEcho"})
		require.NoError(t, w.Start())
		return w
	}
	rightClient := dial(payloadcodec.GenerateKey())
	wrongClient := dial(payloadcodec.GenerateKey()) // the same key id, another key

	queue := "keys-" + uuid.NewString()
	wrong := poll(wrongClient, queue, "wrong-key-worker")
	// A short task timeout: the tasks the wrong worker takes after its
	// first failure time out instead of failing again (the SDK reports a
	// task's failure once).
	run, err := rightClient.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: "keyed-" + uuid.NewString(), TaskQueue: queue, WorkflowTaskTimeout: 2 * time.Second,
	}, "KeyedEcho", keyedInput{Text: "customer words"})
	require.NoError(t, err)

	var failure string
	require.Eventually(t, func() bool {
		for _, event := range historyOf(ctx, t, rightClient, run.GetID()) {
			if a := event.GetWorkflowTaskFailedEventAttributes(); a != nil {
				failure = a.GetFailure().GetMessage()
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "the wrong key's workflow task never failed")
	require.Contains(t, failure, `key "k1", scope "acme"`, "the task's failure names the key and scope")
	desc, err := rightClient.DescribeWorkflowExecution(ctx, run.GetID(), "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, desc.GetWorkflowExecutionInfo().GetStatus(),
		"the workflow was not failed")
	wrong.Stop()

	right := poll(rightClient, queue, "right-key-worker")
	defer right.Stop()
	gctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var out keyedInput
	require.NoError(t, run.Get(gctx, &out), "the right key's worker completes the workflow")
	require.Equal(t, "customer words", out.Text)
}
