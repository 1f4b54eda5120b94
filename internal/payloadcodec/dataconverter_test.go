package payloadcodec_test

import (
	"context"
	"errors"
	"fmt"
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

// failingSecrets answers every scope with err.
type failingSecrets struct{ err error }

func (f failingSecrets) Secret(context.Context, string) ([]byte, error) { return nil, f.err }

// In workflow code, a payload this worker cannot decrypt (a key it lacks or
// that differs, a scope secret it cannot read now) panics, naming the key
// and scope, so the SDK fails the workflow task for another worker to
// retry; a shredded scope, and every failure outside workflow code, is a
// returned error.
func TestDataConverterPanicsInWorkflowCodeOnly(t *testing.T) {
	t.Parallel()
	scopeOf := func(context.Context, string) (string, error) { return "acme", nil }
	converterOf := func(enc *payloadcodec.Encryptor) converter.DataConverter {
		return payloadcodec.DataConverter(converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), enc.WorkflowCodec(scopeOf)))
	}
	right := newSetup(t, "k1", map[string][]byte{"k1": key1})
	sent, err := converter.WithDataConverterSerializationContext(converterOf(right.enc), converter.WorkflowSerializationContext{WorkflowID: "job-1"}).
		ToPayloads(customerText{"secret words"})
	require.NoError(t, err)

	inWorkflow := func(dc converter.DataConverter) converter.DataConverter {
		bound := converter.WithDataConverterSerializationContext(dc, converter.WorkflowSerializationContext{WorkflowID: "job-1"})
		return bound.(converter.ContextAware).WithWorkflowContext(nil)
	}
	inActivity := func(dc converter.DataConverter) converter.DataConverter {
		return inWorkflow(dc).(converter.ContextAware).WithContext(context.Background())
	}

	var got customerText
	require.NoError(t, inWorkflow(converterOf(right.enc)).FromPayloads(sent, &got), "the right key decodes")
	require.Equal(t, "secret words", got.Text)

	retried := map[string]*payloadcodec.Encryptor{
		"wrong key":          newSetup(t, "k1", map[string][]byte{"k1": key2}).enc,
		"unknown key":        newSetup(t, "k2", map[string][]byte{"k2": key2}).enc,
		"secret unavailable": payloadcodec.New(ring(t, "k1", map[string][]byte{"k1": key1}), failingSecrets{errors.New("store down")}, payloadcodec.Options{}),
	}
	for name, enc := range retried {
		dc := converterOf(enc)
		p := panicOf(func() { _ = inWorkflow(dc).FromPayloads(sent, &got) })
		require.Error(t, p, "%s: workflow code panics", name)
		require.Contains(t, p.Error(), `key "k1", scope "acme"`, name)
		p = panicOf(func() { _ = inWorkflow(dc).FromPayload(sent.Payloads[0], &got) })
		require.Error(t, p, name)
		require.Error(t, inActivity(dc).FromPayloads(sent, &got), "%s: an activity gets the error", name)
		require.NoError(t, panicOf(func() { _ = inActivity(dc).FromPayloads(sent, &got) }), name)
		require.Error(t, dc.FromPayloads(sent, &got), "%s: a client gets the error", name)
	}

	shredded := newSetup(t, "k1", map[string][]byte{"k1": key1})
	shredded.secrets.Delete("acme")
	dc := inWorkflow(converterOf(shredded.enc))
	require.NoError(t, panicOf(func() { err = dc.FromPayloads(sent, &got) }), "a shredded scope is final: no panic")
	require.ErrorIs(t, err, payloadcodec.ErrScopeShredded)

	var n int
	require.NoError(t, panicOf(func() { err = inWorkflow(converterOf(right.enc)).FromPayloads(sent, &n) }), "a value that does not convert: no panic")
	require.Error(t, err)
}

// panicOf runs fn and returns what it panicked with, as an error; nil if
// it did not panic.
func panicOf(fn func()) (p error) {
	defer func() {
		if r := recover(); r != nil {
			var ok bool
			if p, ok = r.(error); !ok {
				p = fmt.Errorf("%v", r)
			}
		}
	}()
	fn()
	return nil
}
