package payloadcodec

import (
	"slices"

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
func DataConverter(codec converter.DataConverter) converter.DataConverter {
	return dataConverter{codec: codec, plain: converter.GetDefaultDataConverter()}
}

type dataConverter struct {
	codec converter.DataConverter
	plain converter.DataConverter
}

var _ converter.DataConverterWithSerializationContext = dataConverter{}

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
	return d.codec.FromPayload(payload, valuePtr)
}

func (d dataConverter) FromPayloads(payloads *commonpb.Payloads, valuePtrs ...any) error {
	return d.codec.FromPayloads(payloads, valuePtrs...)
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
