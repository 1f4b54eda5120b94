package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// usageDataDir is a data dir whose ledger bills acme 3 × 0.1 USD (two on
// Nov 25, one on Nov 26) and globex 0.7 EUR on Nov 25.
func usageDataDir(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	day := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	bills := []struct {
		tenant, currency string
		nanos            int64
		at               time.Time
	}{
		{"acme", "USD", 100_000_000, day},
		{"acme", "USD", 100_000_000, day.Add(time.Hour)},
		{"acme", "USD", 100_000_000, day.AddDate(0, 0, 1)},
		{"globex", "EUR", 700_000_000, day},
	}
	var records []jobs.Record
	for i := range bills {
		records = append(records, failedJob(i, "NONE"))
		records[i].Tenant = bills[i].tenant
	}
	dir := jobsDataDir(t, records...)
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "gateway.db"))
	require.NoError(t, err)
	defer st.Close()
	for i, b := range bills {
		done := records[i]
		done.Status, done.Revision, done.ErrorCode = jobs.StatusCompleted, 3, ""
		require.NoError(t, st.Jobs.SaveJobUsage(ctx, &done, &store.UsageEntry{JobID: done.ID, Attempt: 1, Tenant: b.tenant,
			Service: done.Service, Provider: "alpha", Unit: "token", Quantity: 1000, Native: `{}`, CostNanos: b.nanos,
			Currency: b.currency, PriceVersion: "v1", BilledAt: b.at}))
	}
	return dir
}

func runUsageCommand(dir string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(append([]string{"usage", "--data-dir", dir}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestUsageCommand(t *testing.T) {
	t.Parallel()
	dir := usageDataDir(t)
	period := []string{"--from", "2026-11-01", "--to", "2026-12-01"}

	code, stdout, stderr := runUsageCommand(dir, append(period, "--tenant", "acme", "--group-by", "day")...)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "DAY         QUANTITY  UNIT   JOBS  ENTRIES  COST  CURRENCY\n"+
		"2026-11-25  2000      token  2     2        0.2   USD\n"+
		"2026-11-26  1000      token  1     1        0.1   USD\n"+
		"acme, 2026-11-01T00:00:00Z to 2026-12-01T00:00:00Z (excluded): 0.3 USD in 3 jobs\n", stdout)

	code, stdout, stderr = runUsageCommand(dir, append(period, "--group-by", "tenant", "-o", "csv")...)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "tenant,quantity,unit,jobs,cost_amount,currency\nacme,3000,token,3,0.3,USD\nglobex,1000,token,1,0.7,EUR\n", stdout,
		"every tenant by default")

	code, stdout, stderr = runUsageCommand(dir, append(period, "-o", "json")...)
	require.Equal(t, 0, code, stderr)
	var report struct {
		Rows   []map[string]any `json:"rows"`
		Totals []map[string]any `json:"totals"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &report), stdout)
	require.Len(t, report.Rows, 2)
	require.Equal(t, map[string]any{"amount": 0.7, "currency": "EUR"}, report.Rows[0]["cost"], "one row per currency")
	require.Equal(t, map[string]any{"amount": 0.3, "currency": "USD"}, report.Totals[1]["cost"])
	require.Equal(t, float64(3), report.Totals[1]["jobs"])

	code, _, stderr = runUsageCommand(dir, "--group-by", "colour")
	require.Equal(t, 2, code, "a usage mistake")
	require.Contains(t, stderr, "--group-by")
	code, _, stderr = runUsageCommand(dir, "--from", "2026-12-01", "--to", "2026-11-01")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--from")
}
