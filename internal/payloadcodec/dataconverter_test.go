package payloadcodec_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/converter"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
)

type customerText struct{ Text string }

type namedString string

// Strings (summaries, job ids) and the SDK's workflow metadata stay
// plaintext; every other value is
// encrypted in the scope of the workflow the context names.
func TestDataConverterLeavesStringsPlain(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "k1", map[string][]byte{"k1": key1})
	scopeOf := func(context.Context, string) (string, error) { return "acme", nil }
	dc := payloadcodec.DataConverter(converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), s.enc.WorkflowCodec(scopeOf)))
	bound := converter.WithDataConverterSerializationContext(dc, converter.WorkflowSerializationContext{WorkflowID: "job-1"})

	summary, err := bound.ToPayload("call openai (attempt 1)")
	require.NoError(t, err)
	require.Equal(t, "json/plain", string(summary.Metadata["encoding"]))
	require.Contains(t, string(summary.Data), "call openai")

	for _, v := range []any{customerText{"secret words"}, namedString("secret words")} {
		p, err := bound.ToPayload(v)
		require.NoError(t, err)
		require.Equal(t, payloadcodec.EncodingEncrypted, string(p.Metadata["encoding"]))
		require.Equal(t, "acme", string(p.Metadata[payloadcodec.MetadataScope]), "the bound context's scope")
		require.NotContains(t, string(p.Data), "secret words")
	}

	ps, err := bound.ToPayloads("job-1", customerText{"secret words"}, 3)
	require.NoError(t, err)
	require.Len(t, ps.Payloads, 3)
	require.Equal(t, "json/plain", string(ps.Payloads[0].Metadata["encoding"]))
	require.Equal(t, payloadcodec.EncodingEncrypted, string(ps.Payloads[1].Metadata["encoding"]))
	require.Equal(t, payloadcodec.EncodingEncrypted, string(ps.Payloads[2].Metadata["encoding"]))
	var (
		id   string
		text customerText
		n    int
	)
	require.NoError(t, dc.FromPayloads(ps, &id, &text, &n))
	require.Equal(t, "job-1", id)
	require.Equal(t, "secret words", text.Text)
	require.Equal(t, 3, n)

	ps, err = bound.ToPayloads(customerText{"secret words"})
	require.NoError(t, err)
	require.Equal(t, "acme", string(ps.Payloads[0].Metadata[payloadcodec.MetadataScope]))
	require.Equal(t, []string{"{\"Text\":\"secret words\"}"}, dc.ToStrings(ps))
	// The SDK answers the workflow metadata query with a raw value.
	raw, err := converter.GetDefaultDataConverter().ToPayload(&sdkpb.WorkflowMetadata{CurrentDetails: "llm-task for acme, completed"})
	require.NoError(t, err)
	ps, err = bound.ToPayloads(converter.NewRawValue(raw))
	require.NoError(t, err)
	require.Contains(t, string(ps.Payloads[0].Data), "llm-task for acme, completed")
	var metadata sdkpb.WorkflowMetadata
	require.NoError(t, dc.FromPayloads(ps, &metadata))
	require.Equal(t, "llm-task for acme, completed", metadata.GetCurrentDetails())
	raw, err = converter.GetDefaultDataConverter().ToPayload(&sdkpb.WorkflowMetadata{})
	require.NoError(t, err)
	raw.Metadata[converter.MetadataMessageType] = []byte("acme.Secret")
	p, err := bound.ToPayload(converter.NewRawValue(raw))
	require.NoError(t, err)
	require.Equal(t, payloadcodec.EncodingEncrypted, string(p.Metadata["encoding"]), "other raw values are encrypted")

	var back string
	require.NoError(t, dc.FromPayload(summary, &back))
	require.Equal(t, "call openai (attempt 1)", back)
}
