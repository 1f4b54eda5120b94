package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/ai-job-gateway/gateway/store"
)

// TestSoak is `make soak` (docs/reliability.md, Soak): the production
// shape (a Temporal server, serve and worker as processes of their own,
// PostgreSQL) under a steady load of jobs with webhooks, with the worker
// killed at a third of the run, PostgreSQL partitioned from serve and the
// worker for 20 s at half (packets held, no reset) and the Temporal server
// killed at two thirds. It
// ends with a ledger: every job submitted ended once, completed, alike in
// the API, in Temporal and at the webhook receiver, each event delivered
// once and in order. It runs only when GATEWAY_SOAK names its duration.
func TestSoak(t *testing.T) {
	duration, err := time.ParseDuration(os.Getenv("GATEWAY_SOAK"))
	if err != nil {
		t.Skip("set GATEWAY_SOAK to a duration (make soak) to run the soak")
	}
	rate := 5.0
	if v, err := strconv.ParseFloat(os.Getenv("GATEWAY_SOAK_RATE"), 64); err == nil && v > 0 {
		rate = v
	}
	receiver := newEventLedger(t)
	shape, dbLink := startProductionShapeThroughLink(t, soakCatalog, jobStartsServe)
	server, api, temporalAddr := shape.server, shape.api, shape.temporal
	apiURL := "http://" + api.listen
	startMemory, startGoroutines := processGauges(t, apiURL)

	var ids []string
	body := `{"data":{"type":"llm-task-job","attributes":{"input":{"type":"text","text":"x","prompt":"y"},"webhook":{"url":"` + receiver.URL + `"}}}}`
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	start := time.Now()
	workerKilled, temporalRestarted := false, false
	var partitioned, healed time.Time
	refused := 0
	for time.Since(start) < duration {
		<-tick.C
		switch elapsed := time.Since(start); {
		case partitioned.IsZero() && elapsed > duration/2:
			partitioned = time.Now()
			t.Logf("%s: partition PostgreSQL from serve and the worker for %s, holding bytes (%d jobs so far)", elapsed.Round(time.Second), soakPartition, len(ids))
			dbLink.SetHeld(true)
		case !partitioned.IsZero() && healed.IsZero() && time.Since(partitioned) >= soakPartition:
			healed = time.Now()
			t.Logf("%s: partition over", elapsed.Round(time.Second))
			dbLink.SetHeld(false)
		}
		began := time.Now()
		status, answer := post(t, apiURL+"/v1/llm-tasks", server.token, body)
		if status == http.StatusServiceUnavailable {
			refused++
			// The store's statement deadline answers within seconds.
			require.Less(t, time.Since(began), 2*store.InteractiveStatementTimeout, "a 503 waited %s", time.Since(began))
			continue // Temporal or the store away: the client retries later
		}
		require.Equal(t, http.StatusAccepted, status, "%s", answer)
		var doc jobDoc
		require.NoError(t, json.Unmarshal(answer, &doc))
		ids = append(ids, doc.Data.ID)
		switch elapsed := time.Since(start); {
		case !workerKilled && elapsed > duration/3:
			workerKilled = true
			t.Logf("%s: kill -9 the worker (%d jobs so far)", elapsed.Round(time.Second), len(ids))
			shape.restartWorker(t)
		case !temporalRestarted && elapsed > 2*duration/3:
			temporalRestarted = true
			t.Logf("%s: kill -9 the Temporal server (%d jobs so far)", elapsed.Round(time.Second), len(ids))
			server.kill()
			server.start()
		}
	}
	t.Logf("submitted %d jobs in %s; %d creates answered 503", len(ids), time.Since(start).Round(time.Second), refused)

	// The ledger.
	tc := temporalClient(t, temporalAddr)
	statuses := map[string]int{}
	deadline := time.Now().Add(5 * time.Minute)
	for _, id := range ids {
		for {
			data := get(t, apiURL+"/v1/llm-tasks/"+id, server.token)
			var doc jobDoc
			if json.Unmarshal(data, &doc) == nil && terminal(doc) {
				statuses[doc.Data.Attributes.Status]++
				break
			}
			require.True(t, time.Now().Before(deadline), "job %s did not end: %s\nin Temporal: %s", id, data, workflowState(tc, id))
			time.Sleep(200 * time.Millisecond)
		}
	}
	inTemporal := 0
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: "ExecutionStatus = 'Completed'"})
		if err != nil {
			return false
		}
		inTemporal = int(resp.GetCount())
		return inTemporal == len(ids)
	}, 2*time.Minute, time.Second, "completed workflows in Temporal: %d of %d", inTemporal, len(ids))
	require.Eventually(t, func() bool { return receiver.completed() == len(ids) }, 2*time.Minute, time.Second,
		"completed events received: %d of %d", receiver.completed(), len(ids))
	duplicates, outOfOrder := receiver.check()
	endMemory, endGoroutines := processGauges(t, apiURL)
	workerMemory, workerGoroutines := processGauges(t, "http://"+shape.worker.listen)

	t.Logf("ledger: submitted %d; API completed %d, failed %d; Temporal completed %d; webhooks: %d completed events, %d duplicate deliveries, %d out of order; "+
		"serve RSS %d MiB -> %d MiB, goroutines %d -> %d; worker (restarted at a third) RSS %d MiB, goroutines %d",
		len(ids), statuses["completed"], statuses["failed"], inTemporal, receiver.completed(), duplicates, outOfOrder,
		startMemory>>20, endMemory>>20, startGoroutines, endGoroutines, workerMemory>>20, workerGoroutines)
	require.Equal(t, len(ids), statuses["completed"], "every job completed")
	require.Zero(t, outOfOrder, "events in order per job")
	require.Less(t, endGoroutines, startGoroutines+100, "serve's goroutines stay flat once the load is over")
	// A redelivery after a crash is allowed (at least once): receivers
	// deduplicate by webhook-id, as the ledger does.
}

// soakPartition is how long the soak holds PostgreSQL's packets from serve
// and the worker.
const soakPartition = 20 * time.Second

// soakCatalog: one sandbox provider answering in 200 ms.
var soakCatalog = "providers:\n" + sandboxLLMProvider("sandbox-soak", "Sandbox (soak)", 200, 0, "0.000001")

// eventLedger is a webhook receiver that keeps every event by job.
type eventLedger struct {
	*httptest.Server
	mu     sync.Mutex
	events map[string][]string // job id -> event names, as received
	seen   map[string]int      // webhook-id -> deliveries
}

func newEventLedger(t *testing.T) *eventLedger {
	l := &eventLedger{events: map[string][]string{}, seen: map[string]int{}}
	l.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var doc struct {
			Event string `json:"event"`
			Data  struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &doc)
		l.mu.Lock()
		l.seen[r.Header.Get("webhook-id")]++
		if l.seen[r.Header.Get("webhook-id")] == 1 {
			l.events[doc.Data.ID] = append(l.events[doc.Data.ID], doc.Event)
		}
		l.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(l.Close)
	return l
}

func (l *eventLedger) completed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, events := range l.events {
		for _, e := range events {
			if strings.HasSuffix(e, ".completed") {
				n++
			}
		}
	}
	return n
}

// check counts redeliveries of an event, and jobs whose completed event
// is not their last.
func (l *eventLedger) check() (duplicates, outOfOrder int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.seen {
		duplicates += n - 1
	}
	for _, events := range l.events {
		if len(events) == 0 || !strings.HasSuffix(events[len(events)-1], ".completed") {
			outOfOrder++
		}
	}
	return duplicates, outOfOrder
}

// processGauges are a process's resident memory and goroutines, from its
// /metrics.
func processGauges(t *testing.T, base string) (rss int64, goroutines int) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	gauge := func(name string) float64 {
		m := regexp.MustCompile(`(?m)^` + name + ` ([0-9.e+]+)$`).FindSubmatch(data)
		require.NotNil(t, m, name)
		v, err := strconv.ParseFloat(string(m[1]), 64)
		require.NoError(t, err)
		return v
	}
	return int64(gauge("process_resident_memory_bytes")), int(gauge("go_goroutines"))
}

// workflowState describes a job's workflow for a failure message: its
// status, pending activities and last events.
func workflowState(tc client.Client, id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	desc, err := tc.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return "describe: " + err.Error()
	}
	out := fmt.Sprintf("status %s, history length %d", desc.GetWorkflowExecutionInfo().GetStatus(), desc.GetWorkflowExecutionInfo().GetHistoryLength())
	for _, pa := range desc.GetPendingActivities() {
		out += fmt.Sprintf("; pending %s attempt %d: %s", pa.GetActivityType().GetName(), pa.GetAttempt(), pa.GetLastFailure().GetMessage())
	}
	if pw := desc.GetPendingWorkflowTask(); pw != nil {
		out += fmt.Sprintf("; pending workflow task %s attempt %d", pw.GetState(), pw.GetAttempt())
	}
	iter := tc.GetWorkflowHistory(ctx, id, "", false, 0)
	var events []string
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			break
		}
		events = append(events, e.GetEventType().String())
	}
	if len(events) > 12 {
		events = events[len(events)-12:]
	}
	return out + "; last events " + strings.Join(events, ", ")
}
