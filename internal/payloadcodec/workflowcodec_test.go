package payloadcodec_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
)

func TestWorkflowCodecEncryptsInTheJobsTenant(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "k1", map[string][]byte{"k1": key1})
	s.secrets.Create(payloadcodec.SystemScope)
	var lookups atomic.Int64
	scopeOf := func(_ context.Context, workflowID string) (string, error) {
		lookups.Add(1)
		switch workflowID {
		case "job-acme":
			return "acme", nil
		case "job-broken":
			return "", errors.New("store unavailable")
		}
		return "", nil
	}
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), s.enc.WorkflowCodec(scopeOf))
	cases := []struct {
		name  string
		ctx   converter.SerializationContext
		scope string
	}{
		{"workflow of a job", converter.WorkflowSerializationContext{WorkflowID: "job-acme"}, "acme"},
		{"activity of a job", converter.ActivitySerializationContext{WorkflowID: "job-acme", ActivityType: "CallProvider"}, "acme"},
		{"workflow that is no job", converter.WorkflowSerializationContext{WorkflowID: "other"}, payloadcodec.SystemScope},
		{"lookup that fails", converter.WorkflowSerializationContext{WorkflowID: "job-broken"}, payloadcodec.SystemScope},
		{"no context", nil, payloadcodec.SystemScope},
	}
	for _, c := range cases {
		bound := dc
		if c.ctx != nil {
			bound = converter.WithDataConverterSerializationContext(dc, c.ctx)
		}
		p, err := bound.ToPayload("Bonjour, customer text")
		require.NoError(t, err, c.name)
		require.Equal(t, c.scope, string(p.Metadata[payloadcodec.MetadataScope]), c.name)
		require.NotContains(t, string(p.Data), "customer text", c.name)
		var back string
		require.NoError(t, dc.FromPayload(p, &back), "%s: decoded without a context", c.name)
		require.Equal(t, "Bonjour, customer text", back, c.name)
	}
	before := lookups.Load()
	_, err := converter.WithDataConverterSerializationContext(dc, converter.WorkflowSerializationContext{WorkflowID: "job-acme"}).ToPayload(1)
	require.NoError(t, err)
	require.Equal(t, before, lookups.Load(), "a job's tenant is looked up once")
}
