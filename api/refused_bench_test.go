package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// BenchmarkRefusedCredentials: 1,000 made-up API keys against 1,000 bad
// JWTs (each a real token with its signature broken), all refused 401 by
// one API on PostgreSQL (docs/benchmarks.md, Refused credentials). An
// iteration sends both, alternating batches of 100; keys-vs-jwts is the
// keys' time over the JWTs': the target is at most 1.
func BenchmarkRefusedCredentials(b *testing.B) {
	const n, batch = 1000, 100
	bd := setupConfigured(b, func(tb testing.TB) *store.Store { return storetest.Postgres(tb) }, nil)
	keys, tokens := make([]string, n), make([]string, n)
	for i := range n {
		id := fmt.Sprintf("%016d", i)
		keys[i] = "gwk_" + strings.NewReplacer("0", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "f", "6", "g", "7", "h", "8", "i", "9", "j").Replace(id) +
			"_" + strings.Repeat("q", 52)
		token, err := bd.issuer.Mint(devidp.TokenRequest{Tenant: tenantA, Subject: fmt.Sprintf("user-%d", i), Scopes: []string{"llm-tasks:read"}, Audience: audience})
		require.NoError(b, err)
		tokens[i] = token[:len(token)-8] + "AAAAAAAA" // the signature's end
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	send := func(credentials []string) time.Duration {
		start := time.Now()
		for _, c := range credentials {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, bd.server.URL+"/v1/jobs", nil)
			require.NoError(b, err)
			req.Header.Set("Authorization", "Bearer "+c)
			resp, err := client.Do(req)
			require.NoError(b, err)
			require.NoError(b, resp.Body.Close())
			require.Equal(b, http.StatusUnauthorized, resp.StatusCode)
		}
		return time.Since(start)
	}
	send(tokens[:10]) // the issuer's keys fetched, connections open
	send(keys[:10])
	var keysTook, tokensTook time.Duration
	b.ResetTimer()
	for range b.N {
		for i := 0; i < n; i += batch {
			keysTook += send(keys[i : i+batch])
			tokensTook += send(tokens[i : i+batch])
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(keysTook.Microseconds())/float64(b.N*n), "µs/key")
	b.ReportMetric(float64(tokensTook.Microseconds())/float64(b.N*n), "µs/jwt")
	ratio := float64(keysTook) / float64(tokensTook)
	b.ReportMetric(ratio, "keys-vs-jwts")
	if ratio > 1 {
		b.Errorf("1,000 made-up keys took %.2f× the time of 1,000 bad JWTs; the target is at most 1", ratio)
	}
}
