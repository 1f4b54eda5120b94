package api_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// BenchmarkEventStreamSubscribers: 2,000 clients follow 100 running jobs,
// 20 each, on one API (docs/benchmarks.md). An iteration writes one
// projection of every job, as its workflow would, and ends once every
// client received the event it reports. subscribe-ms is how long the
// 2,000 subscriptions took to open and deliver their first event.
func BenchmarkEventStreamSubscribers(b *testing.B) {
	const jobCount, perJob = 100, 20
	bd := setupStreaming(b)
	token, err := bd.issuer.Mint(devidp.TokenRequest{Tenant: tenantA, Subject: userA, Scopes: []string{"transcriptions:read"}, Audience: audience})
	require.NoError(b, err)
	ctx := context.Background()
	records := make([]jobs.Record, jobCount)
	save := func(job *jobs.Record, status jobs.Status, progress int) {
		job.Status, job.Progress, job.Revision = status, progress, job.Revision+1
		if status == jobs.StatusCompleted {
			now := time.Now()
			job.CompletedAt, job.Result = &now, sampleResults["transcriptions"]
		}
		saved := *job
		require.NoError(b, bd.store.Jobs.SaveJob(ctx, &saved))
	}
	for i := range records {
		records[i] = jobs.Record{ID: uuid.Must(uuid.NewV7()).String(), Service: "transcriptions", Status: jobs.StatusPending}
		fillSeed(&records[i])
		records[i].Revision = 0
		save(&records[i], jobs.StatusProcessing, 0)
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: jobCount * perJob}}
	defer client.CloseIdleConnections()
	received := make(chan struct{}, jobCount*perJob*4)
	var streams sync.WaitGroup
	started := time.Now()
	for i := range jobCount * perJob {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, bd.server.URL+jobPath("transcriptions", records[i%jobCount].ID, "/events"), nil)
		require.NoError(b, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "text/event-stream")
		streams.Go(func() {
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			defer resp.Body.Close()
			lines := bufio.NewScanner(resp.Body)
			for lines.Scan() {
				if strings.HasPrefix(lines.Text(), "id: ") {
					received <- struct{}{}
				}
			}
		})
	}
	wait := func() {
		for range jobCount * perJob {
			select {
			case <-received:
			case <-time.After(30 * time.Second):
				b.Fatal("a subscriber got no event in 30 s")
			}
		}
	}
	wait()
	subscribed := time.Since(started)

	b.ResetTimer()
	for i := range b.N {
		for j := range records {
			save(&records[j], jobs.StatusProcessing, i%100)
		}
		wait()
	}
	b.StopTimer()
	b.ReportMetric(float64(subscribed.Milliseconds()), "subscribe-ms")
	for j := range records {
		save(&records[j], jobs.StatusCompleted, 100)
	}
	wait()
	streams.Wait()
}
