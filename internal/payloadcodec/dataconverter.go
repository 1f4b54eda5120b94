package payloadcodec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/converter"
)

// DataConverter is codec (a data converter whose codec encrypts, such as
// converter.NewCodecDataConverter(base, e.WorkflowCodec(scopeOf))) except
// that values of Go type string are encoded by the default data converter,
// unencrypted. The SDK encodes workflow and activity summaries as plain
// strings (and so does no other value of this gateway that carries
// customer content: those are structs), so summaries stay readable in
// Temporal's UI and in `gateway jobs show` without keys; job ids passed as
// bare strings stay readable too, being metadata. A named string type
// (type X string) is encrypted as any other value.
//
// The SDK's workflow metadata (the answer to the __temporal_workflow_metadata
// query: the workflow's current details, and its query and update names)
// stays plaintext too, so the UI shows current details without a codec
// server; the workflows set no customer content there either.
//
// Decoding goes through codec, which passes unencrypted payloads through.
// The serialization context (the workflow the payloads belong to) is
// handed on to codec, which picks the scope from it.
//
// In workflow code (the SDK binds the converter with WithWorkflowContext)
// a payload this worker cannot decrypt, with a key or scope secret it
// lacks or cannot read now, panics instead of returning the error: the
// SDK fails the workflow task, which another worker retries, where an
// error would fail the workflow's execution for good. A shredded scope
// (ErrScopeShredded) is final and stays an error, and so is every failure
// in activities and clients (docs/operations.md, Payload encryption).
func DataConverter(codec converter.DataConverter) converter.DataConverter {
	return dataConverter{codec: codec, plain: converter.GetDefaultDataConverter()}
}

type dataConverter struct {
	codec converter.DataConverter
	plain converter.DataConverter
	// inWorkflow: bound to a workflow context, where codec failures panic.
	inWorkflow bool
}

var (
	_ converter.DataConverterWithSerializationContext = dataConverter{}
	_ converter.ContextAware                          = dataConverter{}
)

func (d dataConverter) ToPayload(value any) (*commonpb.Payload, error) {
	if plain(value) {
		return d.plain.ToPayload(value)
	}
	return d.codec.ToPayload(value)
}

func (d dataConverter) ToPayloads(values ...any) (*commonpb.Payloads, error) {
	if !slices.ContainsFunc(values, plain) {
		return d.codec.ToPayloads(values...)
	}
	out := &commonpb.Payloads{Payloads: make([]*commonpb.Payload, len(values))}
	for i, v := range values {
		p, err := d.ToPayload(v)
		if err != nil {
			return nil, err
		}
		out.Payloads[i] = p
	}
	return out, nil
}

// workflowMetadataType is the message type of the SDK's workflow metadata.
var workflowMetadataType = string((&sdkpb.WorkflowMetadata{}).ProtoReflect().Descriptor().FullName())

// plain tells the values that are encoded unencrypted: strings and the
// SDK's workflow metadata.
func plain(value any) bool {
	switch v := value.(type) {
	case string, *sdkpb.WorkflowMetadata:
		return true
	case converter.RawValue:
		return string(v.Payload().GetMetadata()[converter.MetadataMessageType]) == workflowMetadataType
	}
	return false
}

func (d dataConverter) FromPayload(payload *commonpb.Payload, valuePtr any) error {
	err := d.codec.FromPayload(payload, valuePtr)
	d.failTaskOn(err, payload)
	return err
}

func (d dataConverter) FromPayloads(payloads *commonpb.Payloads, valuePtrs ...any) error {
	err := d.codec.FromPayloads(payloads, valuePtrs...)
	d.failTaskOn(err, payloads.GetPayloads()...)
	return err
}

// failTaskOn panics, in workflow code, when err is a failure of this
// worker's keys or scope secrets that another worker may not share: the
// SDK then fails the workflow task (WorkflowPanicPolicy BlockWorkflow)
// rather than the workflow.
func (d dataConverter) failTaskOn(err error, payloads ...*commonpb.Payload) {
	if err == nil || !d.inWorkflow || !retryableDecodeFailure(err) {
		return
	}
	panic(fmt.Errorf("payloadcodec: this worker cannot decode the workflow's payloads (%s); "+
		"the workflow task fails for a worker with the key to retry: %w", encryptedWith(payloads), err))
}

// retryableDecodeFailure: err is the codec's, and may not be another
// worker's (a key it lacks, a key that differs, a secret it could not read
// now), as opposed to a shredded scope or a value that does not convert.
func retryableDecodeFailure(err error) bool {
	if errors.Is(err, ErrScopeShredded) {
		return false
	}
	return errors.Is(err, ErrDecrypt) || errors.Is(err, ErrUnknownKey) || errors.Is(err, ErrSecretUnavailable) ||
		errors.Is(err, context.DeadlineExceeded)
}

// encryptedWith names the key ids and scopes of the encrypted payloads.
func encryptedWith(payloads []*commonpb.Payload) string {
	var names []string
	for _, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != EncodingEncrypted {
			continue
		}
		name := fmt.Sprintf("key %q, scope %q", p.GetMetadata()[MetadataKeyID], p.GetMetadata()[MetadataScope])
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "no encrypted payload"
	}
	return strings.Join(names, "; ")
}

func (d dataConverter) ToString(payload *commonpb.Payload) string {
	return d.codec.ToString(payload)
}

func (d dataConverter) ToStrings(payloads *commonpb.Payloads) []string {
	return d.codec.ToStrings(payloads)
}

// WithSerializationContext binds codec to the workflow or activity the
// payloads belong to.
func (d dataConverter) WithSerializationContext(sc converter.SerializationContext) converter.DataConverter {
	d.codec = converter.WithDataConverterSerializationContext(d.codec, sc)
	return d
}

// WithWorkflowContext binds the converter to workflow code: codec failures
// another worker may not have panic (DataConverter).
func (d dataConverter) WithWorkflowContext(ctx converter.WorkflowContext) converter.DataConverter {
	if c, ok := d.codec.(converter.ContextAware); ok {
		d.codec = c.WithWorkflowContext(ctx)
	}
	d.inWorkflow = true
	return d
}

// WithContext binds the converter to an activity or a client: failures are
// returned.
func (d dataConverter) WithContext(ctx context.Context) converter.DataConverter {
	if c, ok := d.codec.(converter.ContextAware); ok {
		d.codec = c.WithContext(ctx)
	}
	d.inWorkflow = false
	return d
}
