package payloadcodec

import (
	"net/http"
	"strings"

	"go.temporal.io/sdk/converter"
)

// ScopeHeader names the scope of a codec server encode request.
const ScopeHeader = "X-Payload-Scope"

// Handler serves Temporal's remote codec protocol (what the Temporal UI
// and CLI call with a codec endpoint): POST <prefix>/decode and
// <prefix>/encode with {"payloads":[...]} in protojson form, answered in
// the same form.
//
// Decode reads each payload's scope from its metadata. Encode needs the
// scope in the X-Payload-Scope header and is refused (400) without it,
// rather than guessed: viewing histories only decodes, and whoever writes
// payloads (starting or signalling a workflow from the UI or CLI) must say
// whose they are.
//
// The handler has no authentication, CORS or body limit: the caller wraps
// it. Its errors name key ids and scopes, never key material or content.
func (e *Encryptor) Handler() http.Handler {
	decode := converter.NewPayloadCodecHTTPHandler(e.Decoder())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/encode") {
			decode.ServeHTTP(w, r) // answers 404 to what is neither
			return
		}
		scope := r.Header.Get(ScopeHeader)
		if scope == "" {
			http.Error(w, "payloadcodec: encode needs the "+ScopeHeader+" header", http.StatusBadRequest)
			return
		}
		converter.NewPayloadCodecHTTPHandler(e.Codec(scope)).ServeHTTP(w, r)
	})
}
