package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// TestUsageEndToEnd: transcriptions of a 3 s and a 60 s tone made by
// ffmpeg are billed by the second at their provider's per_minute price,
// in the job, its completed webhook and the usage ledger.
func TestUsageEndToEnd(t *testing.T) {
	t.Parallel()
	mediatest.RequireTools(t)
	g := newGateway(t, "")
	recv := newHookReceiver(t, http.StatusOK)

	served := t.TempDir()
	for _, secs := range []float64{3, 60} {
		tone := mediatest.Tone(t, t.TempDir(), secs)
		require.NoError(t, os.Rename(tone, filepath.Join(served, map[float64]string{3: "short.wav", 60: "long.wav"}[secs])))
	}
	files := &http.Server{Handler: http.FileServer(http.Dir(served))}
	addr := freeAddr(t)
	listener, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", addr)
	require.NoError(t, err)
	go func() { _ = files.Serve(listener) }()
	t.Cleanup(func() { _ = files.Close() })

	catalog := providers.DefaultCatalog()
	ids := map[float64]string{}
	for secs, name := range map[float64]string{3: "short.wav", 60: "long.wav"} {
		job := g.create("transcriptions", `{"data":{"type":"transcription-job","attributes":{"input":{"type":"audio","url":"http://`+
			addr+`/`+name+`"},"webhook":{"url":"`+recv.URL+`"}}}}`)
		ids[secs] = job.Data.ID
	}
	usages := map[string]jobs.JobUsage{}
	for secs, id := range ids {
		done := g.waitEnded("transcriptions", id, 90*time.Second, "completed")
		status, body, _ := g.do(http.MethodGet, "/v1/transcriptions/"+id, "")
		require.Equal(t, http.StatusOK, status)
		var doc struct {
			Data struct {
				Attributes struct {
					Usage  *jobs.JobUsage  `json:"usage"`
					Result json.RawMessage `json:"result"`
				} `json:"attributes"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(body, &doc))
		u := doc.Data.Attributes.Usage
		require.NotNil(t, u, "%s", body)
		require.InDelta(t, secs, *u.Native.MediaSeconds, 0.1, "the probed seconds")
		require.NotContains(t, string(doc.Data.Attributes.Result), `"usage"`, "result.usage only with include_usage")

		provider, ok := catalog.Lookup(done.Data.Attributes.Provider)
		require.True(t, ok)
		pricing := provider.Services[jobs.Transcriptions].Pricing
		require.Equal(t, providers.PerMinute, pricing.Unit)
		require.Equal(t, "minute", u.Unit)
		require.Equal(t, pricing.Currency, u.Cost.Currency)
		require.InDelta(t, *u.Native.MediaSeconds/60*pricing.Amount, float64(u.Cost.Nanos)/1e9, 1e-9)
		require.Equal(t, providers.NewPriceBook(catalog).Version(), u.PriceVersion)
		usages[id] = *u
	}

	// The completed webhooks carry the same usage.
	for _, id := range ids {
		var found bool
		for deadline := time.Now().Add(60 * time.Second); !found && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			for _, c := range recv.received() {
				var hook struct {
					Data struct {
						ID         string `json:"id"`
						Attributes struct {
							Usage *jobs.JobUsage `json:"usage"`
						} `json:"attributes"`
					} `json:"data"`
				}
				require.NoError(t, json.Unmarshal(c.body, &hook))
				if c.event == "transcription.completed" && hook.Data.ID == id {
					require.NotNil(t, hook.Data.Attributes.Usage, "%s", c.body)
					require.Equal(t, usages[id], *hook.Data.Attributes.Usage)
					found = true
				}
			}
		}
		require.True(t, found, "no transcription.completed event for %s", id)
	}

	// One ledger entry each.
	g.stop()
	st, err := store.Open(t.Context(), "sqlite:"+filepath.Join(g.dataDir, "gateway.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	var cost int64
	for _, id := range ids {
		cost += usages[id].Cost.Nanos
	}
	report, err := st.Usage.UsageReport(t.Context(), store.UsageQuery{Tenant: "acme", From: time.Now().Add(-time.Hour),
		To: time.Now().Add(time.Hour), GroupBy: []store.UsageKey{store.UsageByUnit}})
	require.NoError(t, err)
	require.Len(t, report.Rows, 1)
	row := report.Rows[0]
	require.Equal(t, "minute", row.Unit)
	require.Equal(t, []int64{int64(len(ids)), int64(len(ids)), cost}, []int64{row.Jobs, row.Entries, row.CostNanos},
		"jobs, entries and cost: each job billed once, as its webhook said")
}
