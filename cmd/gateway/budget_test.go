package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
	"github.com/ai-job-gateway/gateway/providers/providertest"
	"github.com/ai-job-gateway/gateway/store"
)

// TestBudgetHoldsAcrossProcesses: 20 transcriptions of 60 s of audio
// (made by ffmpeg) sent at once through two serve processes against a
// tenant's budget of 10 minutes a day, with workers in two processes on
// one PostgreSQL. Exactly 10 run; the other 10 fail BUDGET_EXCEEDED before
// any provider is called; the ledger holds exactly the limit; the 50 and
// 100 % thresholds reach the tenant's notification URL once each.
func TestBudgetHoldsAcrossProcesses(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t)
	shape := startProductionShapeWithBlobs(t, providertest.SandboxCatalog("sandbox-budget", 200), jobStartsAuto)
	second := startProcess(t, append(shape.env, "OIDC_ISSUER_URL="+shape.server.url("/dev/oidc")),
		"serve", "--providers", shape.worker0[2], "--tenant-create-rate", "0")
	hooks := newHookReceiver(t, http.StatusOK)

	// The audio, served over HTTP.
	tone := mediatest.Tone(t, t.TempDir(), 60)
	files := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, tone) })}
	audio := freeAddr(t)
	listener, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", audio)
	require.NoError(t, err)
	go func() { _ = files.Serve(listener) }()
	t.Cleanup(func() { _ = files.Close() })

	out, err := exec.Command(gatewayBin, "token", "--data-dir", shape.server.dataDir, "--tenant", "ops", "--sub", "finance",
		"--super-admin").Output()
	require.NoError(t, err)
	admin := strings.TrimSpace(string(out))
	status, body := post(t, "http://"+shape.api.listen+"/v1/tenants", admin, `{"data":{"id":"acme","type":"tenant","attributes":{
		"budgets":[{"id":"audio","period":"day","limit":{"quantity":10,"unit":"minute"},"thresholds":[50,100]}],
		"notification_url":"`+hooks.URL+`"}}}`)
	require.Equal(t, http.StatusCreated, status, "%s", body)

	// 20 at once, half through each serve.
	job := `{"data":{"type":"transcription-job","attributes":{"input":{"type":"audio","url":"http://` + audio + `/tone.wav"}}}}`
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ids     []string
		refused int
	)
	for i := range 20 {
		serve := []*process{shape.api, second}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, body := post(t, "http://"+serve.listen+"/v1/transcriptions", shape.server.token, job)
			mu.Lock()
			defer mu.Unlock()
			switch status {
			case http.StatusAccepted:
				var doc jobDoc
				require.NoError(t, json.Unmarshal(body, &doc))
				ids = append(ids, doc.Data.ID)
			case http.StatusPaymentRequired:
				refused++
			default:
				t.Errorf("create answered %d: %s", status, body)
			}
		}()
	}
	wg.Wait()

	ctx := context.Background()
	st, err := store.Open(ctx, strings.TrimPrefix(shape.env[0], "DATABASE_URL="))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	completed, exceeded := 0, refused
	for _, id := range ids {
		var doc jobDoc
		require.Eventually(t, func() bool {
			require.NoError(t, json.Unmarshal(get(t, "http://"+shape.api.listen+"/v1/transcriptions/"+id, shape.server.token), &doc))
			return doc.Data.Attributes.Status == "completed" || doc.Data.Attributes.Status == "failed"
		}, 3*time.Minute, 250*time.Millisecond, "job %s", id)
		if doc.Data.Attributes.Status == "completed" {
			completed++
			continue
		}
		require.Equal(t, jobs.CodeBudgetExceeded, doc.Data.Attributes.Error.Code, "job %s", id)
		exceeded++
		require.Empty(t, doc.Data.Attributes.RoutingHistory, "job %s was never routed", id)
	}
	require.Equal(t, 10, completed, "exactly the budget's 10 minutes ran")
	require.Equal(t, 10, exceeded, "the rest were refused (402) or failed BUDGET_EXCEEDED")
	// The ledger bills the completed jobs once each, and no other.
	report, err := st.Usage.UsageReport(ctx, store.UsageQuery{Tenant: "acme", From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	require.Len(t, report.Totals, 1)
	require.Equal(t, []int64{10, 10}, []int64{report.Totals[0].Jobs, report.Totals[0].Entries}, "jobs billed, entries")

	// The ledger holds exactly the limit, settled, nothing left reserved.
	limit := store.Budget{ID: "audio", Period: store.PeriodDay, Unit: "minute", Limit: 10e9}
	used, err := st.Usage.BudgetUsed(ctx, "acme", limit, time.Now())
	require.NoError(t, err)
	require.Equal(t, store.BudgetUse{Settled: 10e9}, used)

	// Each threshold reached the tenant once, from the store's queue.
	var thresholds []int
	require.Eventually(t, func() bool {
		thresholds = thresholds[:0]
		for _, c := range hooks.received() {
			var event struct {
				Event string `json:"event"`
				Data  struct {
					Budget    string `json:"budget"`
					Threshold int    `json:"threshold"`
				} `json:"data"`
			}
			require.NoError(t, json.Unmarshal(c.body, &event))
			require.Equal(t, "budget.threshold", event.Event)
			require.Equal(t, "audio", event.Data.Budget)
			require.NotEmpty(t, c.header.Get("webhook-signature"))
			thresholds = append(thresholds, event.Data.Threshold)
		}
		return len(thresholds) == 2
	}, 30*time.Second, 200*time.Millisecond)
	require.ElementsMatch(t, []int{50, 100}, thresholds)
}
