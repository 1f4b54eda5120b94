package providertest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/providertest"
)

func TestSandboxCatalogIsValidAndCoversEveryService(t *testing.T) {
	t.Parallel()
	c, err := providers.ParseCatalog([]byte(providertest.SandboxCatalog("s", 250)))
	require.NoError(t, err)
	p, ok := c.Lookup("s")
	require.True(t, ok)
	require.Len(t, p.Services, len(jobs.Services()))
	require.EqualValues(t, 250, p.Settings["latency_ms"])
}
