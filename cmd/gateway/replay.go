package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/workflows"
)

// replayFlags are the flags of `gateway replay` (docs/operations.md,
// Replaying histories).
type replayFlags struct {
	Query string
	Limit int
}

// defaultReplayQuery selects the job workflows that have closed.
const defaultReplayQuery = "WorkflowType = '" + workflows.JobWorkflowName + "' AND ExecutionStatus != 'Running'"

// runReplay replays job histories against this binary's workflow code:
// the history files and job ids given, or else the most recent closed job
// workflows the query selects. It fails naming the first job whose
// history no longer replays, and the event where it diverges.
func runReplay(ctx context.Context, cfg config, flags replayFlags, targets []string, stdout io.Writer, logger *slog.Logger) error {
	var tc client.Client
	dial := func() (client.Client, error) {
		if tc == nil {
			var err error
			if tc, err = dialTemporal(ctx, cfg, logger); err != nil {
				return nil, err
			}
		}
		return tc, nil
	}
	defer func() {
		if tc != nil {
			tc.Close()
		}
	}()
	if len(targets) == 0 {
		c, err := dial()
		if err != nil {
			return err
		}
		if targets, err = recentJobs(ctx, c, cfg.TemporalNamespace, flags.Query, flags.Limit); err != nil {
			return err
		}
		if len(targets) == 0 {
			fmt.Fprintf(stdout, "no job workflow matches %q\n", flags.Query)
			return nil
		}
	}
	// Encrypted payloads are decrypted with the payload keys and the
	// store's scope secrets, read-only: replaying records no key id and
	// makes no scope secret.
	keys, err := payloadKeys(cfg, "replay", logger)
	if err != nil {
		return err
	}
	var opts worker.WorkflowReplayerOptions
	var decoder converter.PayloadCodec
	if keys != nil {
		var closeStore func()
		decoder, closeStore, err = historyDecoder(ctx, cfg, keys, logger)
		if err != nil {
			return err
		}
		defer closeStore()
		opts.DataConverter = payloadcodec.DataConverter(converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), replayCodec{decoder}))
		opts.FailureConverter = failureConverter(opts.DataConverter)
	}
	replayer, err := worker.NewWorkflowReplayerWithOptions(opts)
	if err != nil {
		return err
	}
	registerWorkflows(replayer)
	quiet := sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	for i, target := range targets {
		var history *historypb.History
		var err error
		if strings.HasSuffix(target, ".json") {
			history, err = readHistoryFile(target)
		} else {
			var c client.Client
			if c, err = dial(); err == nil {
				history, err = jobHistory(ctx, c, target)
			}
		}
		if err == nil && decoder != nil {
			err = checkDecrypts(ctx, history, decoder)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", target, err)
		}
		if err := replayer.ReplayWorkflowHistory(quiet, history); err != nil {
			return fmt.Errorf("job %s does not replay on this binary (%d of %d checked): %w", target, i+1, len(targets), err)
		}
	}
	fmt.Fprintf(stdout, "%d job histories replay on this binary\n", len(targets))
	return nil
}

// replayCodec decrypts a history's payloads in the scopes they name,
// making no scope secret (a scope without one fails as shredded). What
// the replayed workflow encodes stays plaintext: the replayer compares
// its commands with the history, not their payloads, and they never
// leave the process.
type replayCodec struct{ decoder converter.PayloadCodec }

func (replayCodec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	return payloads, nil
}

func (c replayCodec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	return c.decoder.Decode(payloads)
}

// checkDecrypts fails unless every payload of history decrypts, leaving
// it as it is: a replayed workflow whose input does not decode fails its
// execution, which a history cut short does not tell from a replay that
// matches.
func checkDecrypts(ctx context.Context, history *historypb.History, decoder converter.PayloadCodec) error {
	err := proxy.VisitPayloads(ctx, history, proxy.VisitPayloadsOptions{
		SkipSearchAttributes: true,
		Visitor: func(_ *proxy.VisitPayloadsContext, payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
			_, err := decoder.Decode(payloads)
			return payloads, err
		},
	})
	if err != nil {
		return fmt.Errorf("its history does not decrypt with these payload keys and the store's scope secrets: %w", err)
	}
	return nil
}

// recentJobs are the ids of the most recent job workflows query selects.
func recentJobs(ctx context.Context, tc client.Client, namespace, query string, limit int) ([]string, error) {
	var ids []string
	var token []byte
	for len(ids) < limit {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: namespace, Query: query, PageSize: int32(min(limit-len(ids), 1000)), NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list job workflows (%s): %w", query, err)
		}
		for _, e := range resp.GetExecutions() {
			ids = append(ids, e.GetExecution().GetWorkflowId())
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	return ids[:min(len(ids), limit)], nil
}

// jobHistory downloads the whole history of a job's workflow.
func jobHistory(ctx context.Context, tc client.Client, jobID string) (*historypb.History, error) {
	history := &historypb.History{}
	iter := tc.GetWorkflowHistory(ctx, workflows.JobWorkflowID(jobID), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		event, err := iter.Next()
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return nil, errNoHistory
		}
		if err != nil {
			return nil, fmt.Errorf("download the history of job %s: %w", jobID, err)
		}
		history.Events = append(history.Events, event)
	}
	if len(history.Events) == 0 {
		return nil, errNoHistory
	}
	return history, nil
}

// errNoHistory: Temporal has no workflow of the job.
var errNoHistory = errors.New("no history")

// writeHistory writes a history as JSON, the format replay and the
// workflow replay tests read.
func writeHistory(w io.Writer, history *historypb.History) error {
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(history)
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

func readHistoryFile(path string) (*historypb.History, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	history := &historypb.History{}
	if err := (temporalproto.CustomJSONUnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, history); err != nil {
		return nil, fmt.Errorf("not a history file: %w", err)
	}
	return history, nil
}
