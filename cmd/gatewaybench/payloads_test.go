package main

import (
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
)

// TestReadsCostChecksEncryptedResults: the reads phase's cost
// measurement checks job results that the gateway encrypted with the
// benchmark's keys; it failed with "payload encoding is not supported"
// when it decoded them without the keys.
func TestReadsCostChecksEncryptedResults(t *testing.T) {
	t.Parallel()
	secrets := payloadcodec.NewMemorySecrets(true)
	keys, err := payloadcodec.ParseKeys(benchPayloadKeys)
	require.NoError(t, err)
	// What a gateway started with payloadKeysEnv records as a job's result.
	gateway := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(),
		payloadcodec.New(keys, secrets, payloadcodec.Options{}).Codec("tenant-000"))
	result := func(status string) *commonpb.Payloads {
		p, err := gateway.ToPayloads(struct {
			Status string `json:"status"`
		}{status})
		require.NoError(t, err)
		return p
	}

	require.ErrorContains(t, endedCompleted(result("completed"), "job"), "payload encoding is not supported")
	require.ErrorContains(t, (&gatewaySystem{}).succeeded(result("completed")), "no payload keys")

	kept := &keptResults{system: &gatewaySystem{}}
	require.NoError(t, kept.succeeded(result("completed")))
	require.NoError(t, kept.succeeded(result("completed")))
	dc, err := resultDecoder(secrets)
	require.NoError(t, err)
	require.NoError(t, checkResults(dc, kept.results))
	require.NoError(t, (&gatewaySystem{results: dc}).succeeded(result("completed")))

	require.NoError(t, kept.succeeded(result("failed")))
	require.EqualError(t, checkResults(dc, kept.results), `job 3 of 3 ended "failed"`)
}

// TestResultDecoderMakesNoSecret: a result in a scope the secrets lack
// fails as shredded, and the scope is left without a secret; the
// benchmark only reads the gateway's.
func TestResultDecoderMakesNoSecret(t *testing.T) {
	t.Parallel()
	keys, err := payloadcodec.ParseKeys(benchPayloadKeys)
	require.NoError(t, err)
	p, err := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(),
		payloadcodec.New(keys, payloadcodec.NewMemorySecrets(true), payloadcodec.Options{}).Codec("tenant-001")).
		ToPayloads(map[string]string{"status": "completed"})
	require.NoError(t, err)

	secrets := payloadcodec.NewMemorySecrets(true)
	dc, err := resultDecoder(secrets)
	require.NoError(t, err)
	require.ErrorIs(t, checkResults(dc, []*commonpb.Payloads{p}), payloadcodec.ErrScopeShredded)
	_, err = secrets.ExistingSecret(t.Context(), "tenant-001")
	require.ErrorIs(t, err, payloadcodec.ErrScopeShredded)
}
