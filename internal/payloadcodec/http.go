package payloadcodec

import (
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// What the codec server (api/codec.go) serves Temporal's remote codec
// protocol with: POST <prefix>/decode and <prefix>/encode with
// {"payloads":[...]} in protojson form, answered in the same form. It
// decodes each payload in the scope the payload names (PayloadScope) and
// encodes in the scope the ScopeHeader names, with the codecs of an
// Encryptor's ReadOnly view; its errors name key ids and scopes, never key
// material or content (docs/operations.md, Codec server).

// ScopeHeader names the scope of a codec server encode request.
const ScopeHeader = "X-Payload-Scope"

// PayloadScope is the scope an encrypted payload names in its metadata
// ("" when it names none); encrypted is false for a payload never
// encrypted, which decodes as it is.
func PayloadScope(p *commonpb.Payload) (scope string, encrypted bool) {
	md := p.GetMetadata()
	if string(md[converter.MetadataEncoding]) != EncodingEncrypted {
		return "", false
	}
	return string(md[MetadataScope]), true
}
