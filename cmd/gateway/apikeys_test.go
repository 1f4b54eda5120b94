package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/providers/providertest"
)

// TestAPIKeyAcrossServeProcesses: a key created over the API of one serve
// runs a job end to end through another, its usage is the key's, a key's
// request rate holds across both, and the other refuses a key within a
// second of its revocation on the first (docs/api.md, API keys). A key's
// max_in_flight holds with ten long jobs asked for at once through both.
func TestAPIKeyAcrossServeProcesses(t *testing.T) {
	t.Parallel()
	// A second provider whose jobs take 3 s: long enough to be in flight.
	slow := strings.TrimPrefix(providertest.SandboxCatalog("sandbox-slow", 3000), "providers:\n")
	shape := startProductionShape(t, providertest.SandboxCatalog("sandbox-keys", 50)+slow, jobStartsAuto)
	second := startProcess(t, append(shape.env, "OIDC_ISSUER_URL="+shape.server.url("/dev/oidc")),
		"serve", "--providers", shape.worker0[2], "--tenant-create-rate", "0")
	first := "http://" + shape.api.listen
	other := "http://" + second.listen
	admin := shape.server.mint("acme", "keys:write keys:read llm-tasks:write llm-tasks:read usage:read")

	status, body := post(t, first+"/v1/api-keys", admin,
		`{"data":{"type":"api-key","attributes":{"name":"e2e","scopes":["llm-tasks:write","llm-tasks:read"]}}}`)
	require.Equal(t, http.StatusCreated, status, "%s", body)
	var created struct {
		Data struct {
			ID         string `json:"id"`
			Attributes struct {
				Secret string `json:"secret"`
			} `json:"attributes"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &created))
	key := created.Data.Attributes.Secret
	require.True(t, strings.HasPrefix(key, "gwk_"+created.Data.ID+"_"))

	status, body = post(t, other+"/v1/llm-tasks", key, llmTaskBody)
	require.Equal(t, http.StatusAccepted, status, "%s", body)
	var doc jobDoc
	require.NoError(t, json.Unmarshal(body, &doc))
	require.Eventually(t, func() bool {
		require.NoError(t, json.Unmarshal(get(t, first+"/v1/llm-tasks/"+doc.Data.ID, key), &doc))
		return doc.Data.Attributes.Status == "completed"
	}, time.Minute, 100*time.Millisecond, "the key's job completes")

	// Its usage is the key's.
	var usage struct {
		Data []struct {
			Attributes struct {
				APIKey *string `json:"api_key"`
				Jobs   int     `json:"jobs"`
			} `json:"attributes"`
		} `json:"data"`
	}
	from := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	require.NoError(t, json.Unmarshal(get(t, first+"/v1/usage?group_by=api_key&from="+from, admin), &usage))
	require.Len(t, usage.Data, 1, "one group: the key's")
	require.NotNil(t, usage.Data[0].Attributes.APIKey)
	require.Equal(t, created.Data.ID, *usage.Data[0].Attributes.APIKey)
	require.Equal(t, 1, usage.Data[0].Attributes.Jobs)

	// A key of 5 requests a minute gets exactly 5 of 8 creates, sent
	// through both serves in turn, and 3 × 429.
	status, body = post(t, first+"/v1/api-keys", admin,
		`{"data":{"type":"api-key","attributes":{"name":"limited","scopes":["llm-tasks:write"],"limits":{"requests_per_minute":5}}}}`)
	require.Equal(t, http.StatusCreated, status, "%s", body)
	var limited struct {
		Data struct {
			Attributes struct {
				Secret string `json:"secret"`
			} `json:"attributes"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &limited))
	if left := time.Minute - time.Since(time.Now().Truncate(time.Minute)); left < 20*time.Second {
		time.Sleep(left + 100*time.Millisecond) // all 8 in one minute
	}
	answers := map[int]int{}
	for i := range 8 {
		status, body := post(t, []string{first, other}[i%2]+"/v1/llm-tasks", limited.Data.Attributes.Secret, llmTaskBody)
		answers[status]++
		if status == http.StatusTooManyRequests {
			require.Contains(t, string(body), "requests_per_minute")
		}
	}
	require.Equal(t, map[int]int{http.StatusAccepted: 5, http.StatusTooManyRequests: 3}, answers)

	// A key of max_in_flight 3: of ten long jobs asked for at once through
	// both serves, three are accepted; once they finished, more are.
	status, body = post(t, first+"/v1/api-keys", admin,
		`{"data":{"type":"api-key","attributes":{"name":"bounded","scopes":["llm-tasks:write","llm-tasks:read"],"limits":{"max_in_flight":3}}}}`)
	require.Equal(t, http.StatusCreated, status, "%s", body)
	require.NoError(t, json.Unmarshal(body, &limited))
	bounded := limited.Data.Attributes.Secret
	slowJob := `{"data":{"type":"llm-task-job","attributes":{"provider":"sandbox-slow","input":{"type":"text","text":"x","prompt":"y"}}}}`
	var mu sync.Mutex
	answers, accepted := map[int]int{}, []string{}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			status, body := post(t, []string{first, other}[i%2]+"/v1/llm-tasks", bounded, slowJob)
			mu.Lock()
			defer mu.Unlock()
			answers[status]++
			switch status {
			case http.StatusTooManyRequests:
				require.Contains(t, string(body), "max_in_flight is 3")
			case http.StatusAccepted:
				var doc jobDoc
				require.NoError(t, json.Unmarshal(body, &doc))
				accepted = append(accepted, doc.Data.ID)
			}
		})
	}
	wg.Wait()
	require.Equal(t, map[int]int{http.StatusAccepted: 3, http.StatusTooManyRequests: 7}, answers)
	for _, id := range accepted {
		require.Eventually(t, func() bool {
			var doc jobDoc
			require.NoError(t, json.Unmarshal(get(t, first+"/v1/llm-tasks/"+id, bounded), &doc))
			return doc.Data.Attributes.Status == "completed"
		}, time.Minute, 100*time.Millisecond)
	}
	status, body = post(t, other+"/v1/llm-tasks", bounded, slowJob)
	require.Equal(t, http.StatusAccepted, status, "finished jobs free their places: %s", body)

	send := func(method, url, token string) int {
		req, err := http.NewRequest(method, url, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, send(http.MethodGet, other+"/v1/llm-tasks/"+doc.Data.ID, key), "checked by the other serve just before")
	require.Equal(t, http.StatusNoContent, send(http.MethodDelete, first+"/v1/api-keys/"+created.Data.ID, admin))
	revoked := time.Now()
	for {
		asked := time.Now()
		status := send(http.MethodGet, other+"/v1/llm-tasks/"+doc.Data.ID, key)
		if status == http.StatusUnauthorized {
			break
		}
		require.Equal(t, http.StatusOK, status)
		require.Less(t, asked.Sub(revoked), time.Second, "the other serve still accepts the key a second after its revocation")
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLeakedKey: the check every gateway process's output gets at its
// end finds a key on any line, a log line of either format or a panic's,
// and leaves alone the line gateway dev prints its dev key on.
func TestLeakedKey(t *testing.T) {
	t.Parallel()
	key := "gwk_abcdefghijklmnop_" + strings.Repeat("a", 52)
	for _, line := range []string{
		`time=2026-12-07T00:00:00Z level=INFO msg="request" authorization="Bearer ` + key + `"`,
		`{"time":"2026-12-07T00:00:00Z","level":"ERROR","msg":"x","key":"` + key + `"}`,
		`panic: bad header Bearer ` + key,
	} {
		require.Equal(t, line, leakedKey("before\n"+line+"\nafter"))
	}
	dev := "API key for tenant acme (every job scope and usage:read; also in .data/dev-api-key): " + key
	require.Empty(t, leakedKey("before\n"+dev+"\nafter"))
	require.Equal(t, "x "+dev, leakedKey("x "+dev), "only the dev key's own line")
	require.Empty(t, leakedKey(`time=2026-12-07T00:00:00Z level=INFO msg="key created" key=abcdefghijklmnop`), "a key's id is not its secret")
}
