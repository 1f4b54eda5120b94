package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/policy"
)

const (
	ptrData    = "/data"
	ptrAttrs   = "/data/attributes"
	ptrInput   = "/data/attributes/input"
	ptrOptions = "/data/attributes/options"
	ptrWebhook = "/data/attributes/webhook"
	ptrMeta    = "/data/meta"

	// unknownPolicy is a well-formed policy id no policy has.
	unknownPolicy = "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f"
)

// invalid is one create request the API must reject.
type invalid struct {
	name    string
	edits   []edit
	raw     string   // sent instead of the edited valid body when set
	headers []string // name, value pairs
	status  int      // 422 when zero
	code    string   // VALIDATION_ERROR when empty
	// pointers must appear in the message (the offending field).
	pointers []string
}

// runInvalid posts each case to resource and checks the error; no case may
// start a workflow.
func runInvalid(t *testing.T, b *bundle, resource string, cases []invalid) {
	t.Helper()
	for _, tc := range cases {
		t.Run(resource+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			var reqBody any = body(t, resource, tc.edits...)
			if tc.raw != "" {
				reqBody = tc.raw
			}
			status, code := tc.status, tc.code
			if status == 0 {
				status = http.StatusUnprocessableEntity
			}
			if code == "" {
				code = "VALIDATION_ERROR"
			}
			r := b.do(t, http.MethodPost, "/v1/"+resource, b.writeToken(t), reqBody, tc.headers...)
			requireError(t, r, status, code, tc.pointers...)
			require.Empty(t, r.Header.Get("Location"))
		})
	}
}

// commonInvalid are the envelope, meta, webhook, routing and header rules
// every resource shares.
func commonInvalid(resource, jobType string) []invalid {
	otherType := "translation-job"
	if jobType == otherType {
		otherType = "transcription-job"
	}
	hook := func(v any) []edit { return []edit{set(ptrWebhook, v)} }
	okURL := "https://hooks.example.com/cb"
	return []invalid{
		// Envelope.
		{name: "empty object", raw: `{}`, pointers: []string{ptrData}},
		{name: "array body", raw: `[]`},
		{name: "string body", raw: `"job"`},
		{name: "null body", raw: `null`},
		{name: "data null", raw: `{"data": null}`, pointers: []string{ptrData}},
		{name: "data array", raw: `{"data": []}`, pointers: []string{ptrData}},
		{name: "data string", raw: `{"data": "x"}`, pointers: []string{ptrData}},
		{name: "data.type missing", edits: []edit{del(ptrData + "/type")}, pointers: []string{ptrData + "/type"}},
		{name: "data.type empty", edits: []edit{set(ptrData+"/type", "")}, pointers: []string{ptrData + "/type"}},
		{name: "data.type of another resource", edits: []edit{set(ptrData+"/type", otherType)}, pointers: []string{ptrData + "/type"}},
		{name: "data.type plural", edits: []edit{set(ptrData+"/type", resource)}, pointers: []string{ptrData + "/type"}},
		{name: "data.type number", edits: []edit{set(ptrData+"/type", 1)}, pointers: []string{ptrData + "/type"}},
		{name: "data.id given", edits: []edit{set(ptrData+"/id", "0195a3c4-7b1e-7c2d-9e3f-4a5b6c7d8e9f")}, pointers: []string{ptrData + "/id"}},
		{name: "unknown data member", edits: []edit{set(ptrData+"/links", map[string]any{})}, pointers: []string{ptrData + "/links"}},
		{name: "attributes missing", edits: []edit{del(ptrAttrs)}, pointers: []string{ptrAttrs}},
		{name: "attributes null", edits: []edit{set(ptrAttrs, nil)}, pointers: []string{ptrAttrs}},
		{name: "attributes array", edits: []edit{set(ptrAttrs, []any{})}, pointers: []string{ptrAttrs}},
		{name: "unknown attribute", edits: []edit{set(ptrAttrs+"/status", "completed")}, pointers: []string{ptrAttrs + "/status"}},
		{name: "attribute named like a field of input", edits: []edit{set(ptrAttrs+"/url", "https://media.example.com/a")}, pointers: []string{ptrAttrs + "/url"}},
		{name: "input missing", edits: []edit{del(ptrInput)}, pointers: []string{ptrInput}},
		{name: "input null", edits: []edit{set(ptrInput, nil)}, pointers: []string{ptrInput}},
		{name: "input array", edits: []edit{set(ptrInput, []any{})}, pointers: []string{ptrInput}},
		{name: "input string", edits: []edit{set(ptrInput, "https://media.example.com/a")}, pointers: []string{ptrInput}},
		{name: "unknown input field", edits: []edit{set(ptrInput+"/colour", "red")}, pointers: []string{ptrInput + "/colour"}},
		{name: "options array", edits: []edit{set(ptrOptions, []any{})}, pointers: []string{ptrOptions}},
		{name: "options string", edits: []edit{set(ptrOptions, "fast")}, pointers: []string{ptrOptions}},
		{name: "options number", edits: []edit{set(ptrOptions, 1)}, pointers: []string{ptrOptions}},
		{name: "unknown option", edits: []edit{set(ptrOptions+"/turbo", true)}, pointers: []string{ptrOptions + "/turbo"}},
		{name: "unknown option with a slash", edits: []edit{set(ptrOptions+"/a~0b~1c", true)}, pointers: []string{ptrOptions + "/a~0b~1c"}},

		// meta.
		{name: "meta string", edits: []edit{set(ptrMeta, "x")}, pointers: []string{ptrMeta}},
		{name: "meta array", edits: []edit{set(ptrMeta, []any{})}, pointers: []string{ptrMeta}},
		{name: "unknown meta member", edits: []edit{set(ptrMeta+"/system", map[string]any{"region": "x"})}, pointers: []string{ptrMeta + "/system"}},
		{name: "meta.client array", edits: []edit{set(ptrMeta+"/client", []any{"a"})}, pointers: []string{ptrMeta + "/client"}},
		{name: "meta.client string", edits: []edit{set(ptrMeta+"/client", "order-17")}, pointers: []string{ptrMeta + "/client"}},
		{name: "meta.client number", edits: []edit{set(ptrMeta+"/client", 17)}, pointers: []string{ptrMeta + "/client"}},
		{name: "meta.client boolean", edits: []edit{set(ptrMeta+"/client", true)}, pointers: []string{ptrMeta + "/client"}},

		// webhook.
		{name: "webhook string", edits: hook(okURL), pointers: []string{ptrWebhook}},
		{name: "webhook array", edits: hook([]any{okURL}), pointers: []string{ptrWebhook}},
		{name: "webhook url missing", edits: hook(map[string]any{}), pointers: []string{ptrWebhook + "/url"}},
		{name: "webhook url missing, headers given", edits: hook(map[string]any{"headers": map[string]any{"X-Token": "t"}}), pointers: []string{ptrWebhook + "/url"}},
		{name: "webhook url empty", edits: hook(map[string]any{"url": ""}), pointers: []string{ptrWebhook + "/url"}},
		{name: "webhook url number", edits: hook(map[string]any{"url": 443}), pointers: []string{ptrWebhook + "/url"}},
		{name: "webhook url ftp", edits: hook(map[string]any{"url": "ftp://hooks.example.com/cb"}), pointers: []string{ptrWebhook + "/url"}},
		{name: "webhook url mailto", edits: hook(map[string]any{"url": "mailto:ops@example.com"}), pointers: []string{ptrWebhook + "/url"}},
		{name: "webhook url relative", edits: hook(map[string]any{"url": "/callbacks/jobs"}), pointers: []string{ptrWebhook + "/url"}},
		{name: "webhook url without scheme", edits: hook(map[string]any{"url": "hooks.example.com/cb"}), pointers: []string{ptrWebhook + "/url"}},
		{name: "webhook url without host", edits: hook(map[string]any{"url": "https:///cb"}), pointers: []string{ptrWebhook + "/url"}},
		{name: "webhook url with credentials", edits: hook(map[string]any{"url": "https://user:secret@hooks.example.com/cb"}), pointers: []string{ptrWebhook + "/url"}},
		{name: "webhook url with user only", edits: hook(map[string]any{"url": "https://token@hooks.example.com/cb"}), pointers: []string{ptrWebhook + "/url"}},
		{name: "webhook unknown member", edits: hook(map[string]any{"url": okURL, "secret": "s"}), pointers: []string{ptrWebhook + "/secret"}},
		{name: "webhook headers array", edits: hook(map[string]any{"url": okURL, "headers": []any{"X-Token: t"}}), pointers: []string{ptrWebhook + "/headers"}},
		{name: "webhook header value number", edits: hook(map[string]any{"url": okURL, "headers": map[string]any{"X-Token": 5}}), pointers: []string{ptrWebhook + "/headers/X-Token"}},
		{name: "webhook reserved header Content-Type", edits: hook(map[string]any{"url": okURL, "headers": map[string]any{"Content-Type": "text/plain"}}), pointers: []string{ptrWebhook + "/headers/Content-Type"}},
		{name: "webhook reserved header host", edits: hook(map[string]any{"url": okURL, "headers": map[string]any{"host": "evil.example.com"}}), pointers: []string{ptrWebhook + "/headers/host"}},
		{name: "webhook reserved header webhook-signature", edits: hook(map[string]any{"url": okURL, "headers": map[string]any{"Webhook-Signature": "v1a,forged"}}), pointers: []string{ptrWebhook + "/headers/Webhook-Signature"}},
		{name: "webhook reserved header webhook-id", edits: hook(map[string]any{"url": okURL, "headers": map[string]any{"webhook-id": "x"}}), pointers: []string{ptrWebhook + "/headers/webhook-id"}},
		{name: "webhook reserved header webhook-timestamp", edits: hook(map[string]any{"url": okURL, "headers": map[string]any{"webhook-timestamp": "1"}}), pointers: []string{ptrWebhook + "/headers/webhook-timestamp"}},
		{name: "webhook reserved header Content-Length", edits: hook(map[string]any{"url": okURL, "headers": map[string]any{"Content-Length": "1"}}), pointers: []string{ptrWebhook + "/headers/Content-Length"}},
		{name: "webhook header name with a space", edits: hook(map[string]any{"url": okURL, "headers": map[string]any{"X Token": "t"}}), pointers: []string{ptrWebhook + "/headers/X Token"}},
		{name: "webhook header name with a colon", edits: hook(map[string]any{"url": okURL, "headers": map[string]any{"X-Token:": "t"}}), pointers: []string{ptrWebhook + "/headers/X-Token:"}},
		{name: "webhook header value with a line break", edits: hook(map[string]any{"url": okURL, "headers": map[string]any{"X-Token": "t\r\nX-Injected: 1"}}), pointers: []string{ptrWebhook + "/headers/X-Token"}},

		// provider and policy_id.
		{name: "provider empty", edits: []edit{set(ptrAttrs+"/provider", "")}, pointers: []string{ptrAttrs + "/provider"}},
		{name: "provider number", edits: []edit{set(ptrAttrs+"/provider", 7)}, pointers: []string{ptrAttrs + "/provider"}},
		{name: "provider object", edits: []edit{set(ptrAttrs+"/provider", map[string]any{"id": "alpha"})}, pointers: []string{ptrAttrs + "/provider"}},
		{name: "unknown provider", edits: []edit{set(ptrAttrs+"/provider", "no-such-provider")}, code: "UNKNOWN_PROVIDER", pointers: []string{ptrAttrs + "/provider"}},
		{name: "provider id in another case", edits: []edit{set(ptrAttrs+"/provider", "Alpha")}, code: "UNKNOWN_PROVIDER", pointers: []string{ptrAttrs + "/provider"}},
		{name: "policy_id not a UUID", edits: []edit{set(ptrAttrs+"/policy_id", "default")}, pointers: []string{ptrAttrs + "/policy_id"}},
		{name: "policy_id UUID without hyphens", edits: []edit{set(ptrAttrs+"/policy_id", strings.ReplaceAll(unknownPolicy, "-", ""))}, pointers: []string{ptrAttrs + "/policy_id"}},
		{name: "policy_id UUID in braces", edits: []edit{set(ptrAttrs+"/policy_id", "{"+unknownPolicy+"}")}, pointers: []string{ptrAttrs + "/policy_id"}},
		{name: "policy_id URN", edits: []edit{set(ptrAttrs+"/policy_id", "urn:uuid:"+unknownPolicy)}, pointers: []string{ptrAttrs + "/policy_id"}},
		{name: "policy_id number", edits: []edit{set(ptrAttrs+"/policy_id", 42)}, pointers: []string{ptrAttrs + "/policy_id"}},
		{name: "unknown policy", edits: []edit{set(ptrAttrs+"/policy_id", unknownPolicy)}, code: "UNKNOWN_POLICY", pointers: []string{ptrAttrs + "/policy_id"}},
		{name: "provider and policy_id", edits: []edit{set(ptrAttrs+"/provider", "alpha"), set(ptrAttrs+"/policy_id", unknownPolicy)}, code: "PROVIDER_AND_POLICY", pointers: []string{ptrAttrs + "/provider", ptrAttrs + "/policy_id"}},
		{name: "unknown provider and policy_id", edits: []edit{set(ptrAttrs+"/provider", "nope"), set(ptrAttrs+"/policy_id", unknownPolicy)}, code: "PROVIDER_AND_POLICY", pointers: []string{ptrAttrs + "/provider", ptrAttrs + "/policy_id"}},

		// Headers.
		{name: "X-Application one character", headers: []string{"X-Application", "a"}, pointers: []string{"X-Application"}},
		{name: "X-Application uppercase", headers: []string{"X-Application", "My-App"}, pointers: []string{"X-Application"}},
		{name: "X-Application trailing hyphen", headers: []string{"X-Application", "my-app-"}, pointers: []string{"X-Application"}},
		{name: "X-Application leading digit", headers: []string{"X-Application", "1app"}, pointers: []string{"X-Application"}},
		{name: "X-Application leading hyphen", headers: []string{"X-Application", "-app"}, pointers: []string{"X-Application"}},
		{name: "X-Application underscore", headers: []string{"X-Application", "my_app"}, pointers: []string{"X-Application"}},
		{name: "X-Application dot", headers: []string{"X-Application", "my.app"}, pointers: []string{"X-Application"}},
		{name: "X-Application 64 characters", headers: []string{"X-Application", "a" + strings.Repeat("b", 62) + "c"}, pointers: []string{"X-Application"}},

		// Syntax.
		{name: "malformed JSON", raw: `{"data": {"type": "` + jobType + `",`, status: http.StatusBadRequest, code: "MALFORMED_JSON"},
		{name: "trailing garbage", raw: validBodies[resource] + ` x`, status: http.StatusBadRequest, code: "MALFORMED_JSON"},
		{name: "two documents", raw: validBodies[resource] + validBodies[resource], status: http.StatusBadRequest, code: "MALFORMED_JSON"},
		{name: "single quotes", raw: `{'data': {}}`, status: http.StatusBadRequest, code: "MALFORMED_JSON"},
		{name: "whitespace only", raw: " \n ", status: http.StatusBadRequest, code: "MALFORMED_JSON"},
	}
}

func TestCreateRejectsInvalidEnvelope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, res := range resources {
		runInvalid(t, b, res.id, commonInvalid(res.id, res.jobType))
	}
	t.Cleanup(func() { b.assertNoStarts(t) })
}

func TestCreateRejectsEmptyBody(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, res := range resources {
		r := b.do(t, http.MethodPost, "/v1/"+res.id, b.writeToken(t), nil)
		requireError(t, r, http.StatusBadRequest, "MALFORMED_JSON")
	}
	b.assertNoStarts(t)
}

func TestCreateRejectsInvalidTranscription(t *testing.T) {
	t.Parallel()
	b := setup(t)
	runInvalid(t, b, "transcriptions", []invalid{
		{name: "type missing", edits: []edit{del(ptrInput + "/type")}, pointers: []string{ptrInput + "/type"}},
		{name: "type empty", edits: []edit{set(ptrInput+"/type", "")}, pointers: []string{ptrInput + "/type"}},
		{name: "type not in enum", edits: []edit{set(ptrInput+"/type", "image")}, pointers: []string{ptrInput + "/type"}},
		{name: "type in another case", edits: []edit{set(ptrInput+"/type", "Audio")}, pointers: []string{ptrInput + "/type"}},
		{name: "type number", edits: []edit{set(ptrInput+"/type", 1)}, pointers: []string{ptrInput + "/type"}},
		{name: "url missing", edits: []edit{del(ptrInput + "/url")}, pointers: []string{ptrInput + "/url"}},
		{name: "url empty", edits: []edit{set(ptrInput+"/url", "")}, pointers: []string{ptrInput + "/url"}},
		{name: "url not a URL", edits: []edit{set(ptrInput+"/url", "talk.mp3")}, pointers: []string{ptrInput + "/url"}},
		{name: "url ftp", edits: []edit{set(ptrInput+"/url", "ftp://media.example.com/talk.mp3")}, pointers: []string{ptrInput + "/url"}},
		{name: "url file", edits: []edit{set(ptrInput+"/url", "file:///etc/passwd")}, pointers: []string{ptrInput + "/url"}},
		{name: "url without host", edits: []edit{set(ptrInput+"/url", "https://")}, pointers: []string{ptrInput + "/url"}},
		{name: "url unparsable", edits: []edit{set(ptrInput+"/url", "https://media.example.com/%zz")}, pointers: []string{ptrInput + "/url"}},
		{name: "url array", edits: []edit{set(ptrInput+"/url", []any{"https://media.example.com/a.mp3"})}, pointers: []string{ptrInput + "/url"}},
		{name: "audio_track negative", edits: []edit{set(ptrInput+"/audio_track", -1)}, pointers: []string{ptrInput + "/audio_track"}},
		{name: "audio_track fractional", edits: []edit{set(ptrInput+"/audio_track", 1.5)}, pointers: []string{ptrInput + "/audio_track"}},
		{name: "audio_track string", edits: []edit{set(ptrInput+"/audio_track", "0")}, pointers: []string{ptrInput + "/audio_track"}},
		{name: "audio_track boolean", edits: []edit{set(ptrInput+"/audio_track", true)}, pointers: []string{ptrInput + "/audio_track"}},
		{name: "input field of another service", edits: []edit{set(ptrInput+"/features", []any{"labels"})}, pointers: []string{ptrInput + "/features"}},
		{name: "language not BCP 47", edits: []edit{set(ptrOptions+"/language", "english!")}, pointers: []string{ptrOptions + "/language"}},
		{name: "language one letter", edits: []edit{set(ptrOptions+"/language", "e")}, pointers: []string{ptrOptions + "/language"}},
		{name: "language auto not allowed", edits: []edit{set(ptrOptions+"/language", "auto")}, pointers: []string{ptrOptions + "/language"}},
		{name: "language number", edits: []edit{set(ptrOptions+"/language", 1)}, pointers: []string{ptrOptions + "/language"}},
		{name: "timestamps string", edits: []edit{set(ptrOptions+"/timestamps", "true")}, pointers: []string{ptrOptions + "/timestamps"}},
		{name: "timestamps number", edits: []edit{set(ptrOptions+"/timestamps", 1)}, pointers: []string{ptrOptions + "/timestamps"}},
		{name: "format not in enum", edits: []edit{set(ptrOptions+"/format", "txt")}, pointers: []string{ptrOptions + "/format"}},
		{name: "format in another case", edits: []edit{set(ptrOptions+"/format", "SRT")}, pointers: []string{ptrOptions + "/format"}},
		{name: "format media type", edits: []edit{set(ptrOptions+"/format", "text/vtt")}, pointers: []string{ptrOptions + "/format"}},
		{name: "diarization string", edits: []edit{set(ptrOptions+"/diarization", "yes")}, pointers: []string{ptrOptions + "/diarization"}},
		{name: "diarization object", edits: []edit{set(ptrOptions+"/diarization", map[string]any{})}, pointers: []string{ptrOptions + "/diarization"}},
		{name: "priority not in enum", edits: []edit{set(ptrOptions+"/priority", "urgent")}, pointers: []string{ptrOptions + "/priority"}},
		{name: "priority number", edits: []edit{set(ptrOptions+"/priority", 1)}, pointers: []string{ptrOptions + "/priority"}},
		{name: "include_usage string", edits: []edit{set(ptrOptions+"/include_usage", "true")}, pointers: []string{ptrOptions + "/include_usage"}},
		{name: "option of another service", edits: []edit{set(ptrOptions+"/formality", "formal")}, pointers: []string{ptrOptions + "/formality"}},

		// Capabilities of an explicit provider.
		{name: "provider lacks diarization", edits: []edit{set(ptrAttrs+"/provider", "narrow"), set(ptrOptions+"/diarization", true)}, code: "UNSUPPORTED_OPTION", pointers: []string{ptrAttrs + "/provider"}},
		{name: "provider lacks the language", edits: []edit{set(ptrAttrs+"/provider", "narrow"), set(ptrOptions+"/language", "ja")}, code: "UNSUPPORTED_OPTION", pointers: []string{ptrAttrs + "/provider"}},
		{name: "provider lacks the service", edits: []edit{set(ptrAttrs+"/provider", "llm-only")}, code: "UNSUPPORTED_OPTION", pointers: []string{ptrAttrs + "/provider"}},
		{name: "provider disabled", edits: []edit{set(ptrAttrs+"/provider", "switched-off")}, code: "PROVIDER_DISABLED", pointers: []string{ptrAttrs + "/provider"}},
		{name: "provider disabled for this service", edits: []edit{set(ptrAttrs+"/provider", "half-off")}, code: "PROVIDER_DISABLED", pointers: []string{ptrAttrs + "/provider"}},
	})
	t.Cleanup(func() { b.assertNoStarts(t) })
}

func TestCreateRejectsInvalidTranslation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	document := []edit{set(ptrInput+"/type", "document"), del(ptrInput + "/content"), set(ptrInput+"/url", "https://docs.example.com/a.docx")}
	runInvalid(t, b, "translations", []invalid{
		{name: "type missing", edits: []edit{del(ptrInput + "/type")}, pointers: []string{ptrInput + "/type"}},
		{name: "type not in enum", edits: []edit{set(ptrInput+"/type", "audio")}, pointers: []string{ptrInput + "/type"}},
		{name: "type boolean", edits: []edit{set(ptrInput+"/type", true)}, pointers: []string{ptrInput + "/type"}},
		{name: "text without content", edits: []edit{del(ptrInput + "/content")}, pointers: []string{ptrInput + "/content"}},
		{name: "text with empty content", edits: []edit{set(ptrInput+"/content", "")}, pointers: []string{ptrInput + "/content"}},
		{name: "text with null content", edits: []edit{set(ptrInput+"/content", nil)}, pointers: []string{ptrInput + "/content"}},
		{name: "content number", edits: []edit{set(ptrInput+"/content", 42)}, pointers: []string{ptrInput + "/content"}},
		{name: "content array", edits: []edit{set(ptrInput+"/content", []any{"a", "b"})}, pointers: []string{ptrInput + "/content"}},
		{name: "text with url", edits: []edit{set(ptrInput+"/url", "https://docs.example.com/a.docx")}, pointers: []string{ptrInput + "/url"}},
		{name: "document without url", edits: []edit{set(ptrInput+"/type", "document"), del(ptrInput + "/content")}, pointers: []string{ptrInput + "/url"}},
		{name: "document with content", edits: append(append([]edit{}, document...), set(ptrInput+"/content", "Hello")), pointers: []string{ptrInput + "/content"}},
		{name: "document url ftp", edits: append(append([]edit{}, document...), set(ptrInput+"/url", "ftp://docs.example.com/a.docx")), pointers: []string{ptrInput + "/url"}},
		{name: "document url relative", edits: append(append([]edit{}, document...), set(ptrInput+"/url", "a.docx")), pointers: []string{ptrInput + "/url"}},
		{name: "target_language missing", edits: []edit{del(ptrInput + "/target_language")}, pointers: []string{ptrInput + "/target_language"}},
		{name: "target_language empty", edits: []edit{set(ptrInput+"/target_language", "")}, pointers: []string{ptrInput + "/target_language"}},
		{name: "target_language not BCP 47", edits: []edit{set(ptrInput+"/target_language", "German")}, pointers: []string{ptrInput + "/target_language"}},
		{name: "target_language auto", edits: []edit{set(ptrInput+"/target_language", "auto")}, pointers: []string{ptrInput + "/target_language"}},
		{name: "target_language number", edits: []edit{set(ptrInput+"/target_language", 49)}, pointers: []string{ptrInput + "/target_language"}},
		{name: "source_language not BCP 47", edits: []edit{set(ptrOptions+"/source_language", "en us")}, pointers: []string{ptrOptions + "/source_language"}},
		{name: "source_language AUTO", edits: []edit{set(ptrOptions+"/source_language", "AUTO")}, pointers: []string{ptrOptions + "/source_language"}},
		{name: "formality not in enum", edits: []edit{set(ptrOptions+"/formality", "casual")}, pointers: []string{ptrOptions + "/formality"}},
		{name: "formality boolean", edits: []edit{set(ptrOptions+"/formality", true)}, pointers: []string{ptrOptions + "/formality"}},
		{name: "priority not in enum", edits: []edit{set(ptrOptions+"/priority", "asap")}, pointers: []string{ptrOptions + "/priority"}},
		{name: "include_usage number", edits: []edit{set(ptrOptions+"/include_usage", 1)}, pointers: []string{ptrOptions + "/include_usage"}},
		{name: "option of another service", edits: []edit{set(ptrOptions+"/language", "en")}, pointers: []string{ptrOptions + "/language"}},

		{name: "provider lacks the target language", edits: []edit{set(ptrAttrs+"/provider", "narrow"), set(ptrInput+"/target_language", "es")}, code: "UNSUPPORTED_OPTION", pointers: []string{ptrAttrs + "/provider"}},
		{name: "provider lacks the source language", edits: []edit{set(ptrAttrs+"/provider", "narrow"), set(ptrOptions+"/source_language", "ja")}, code: "UNSUPPORTED_OPTION", pointers: []string{ptrAttrs + "/provider"}},
		{name: "provider lacks formality", edits: []edit{set(ptrAttrs+"/provider", "narrow"), set(ptrOptions+"/formality", "formal")}, code: "UNSUPPORTED_OPTION", pointers: []string{ptrAttrs + "/provider"}},
		{name: "provider lacks the service", edits: []edit{set(ptrAttrs+"/provider", "llm-only")}, code: "UNSUPPORTED_OPTION", pointers: []string{ptrAttrs + "/provider"}},
		{name: "provider disabled", edits: []edit{set(ptrAttrs+"/provider", "switched-off")}, code: "PROVIDER_DISABLED", pointers: []string{ptrAttrs + "/provider"}},
	})
	t.Cleanup(func() { b.assertNoStarts(t) })
}

func TestCreateRejectsInvalidVideoAnalysis(t *testing.T) {
	t.Parallel()
	b := setup(t)
	features := ptrInput + "/features"
	runInvalid(t, b, "video-analyses", []invalid{
		{name: "url missing", edits: []edit{del(ptrInput + "/url")}, pointers: []string{ptrInput + "/url"}},
		{name: "url rtmp", edits: []edit{set(ptrInput+"/url", "rtmp://media.example.com/live")}, pointers: []string{ptrInput + "/url"}},
		{name: "url number", edits: []edit{set(ptrInput+"/url", 1)}, pointers: []string{ptrInput + "/url"}},
		{name: "features missing", edits: []edit{del(features)}, pointers: []string{features}},
		{name: "features null", edits: []edit{set(features, nil)}, pointers: []string{features}},
		{name: "features empty", edits: []edit{set(features, []any{})}, pointers: []string{features}},
		{name: "features string", edits: []edit{set(features, "labels")}, pointers: []string{features}},
		{name: "features object", edits: []edit{set(features, map[string]any{"labels": true})}, pointers: []string{features}},
		{name: "feature number", edits: []edit{set(features, []any{1})}, pointers: []string{features}},
		{name: "feature unknown", edits: []edit{set(features, []any{"labels", "colours"})}, pointers: []string{features + "/1"}},
		{name: "feature in another case", edits: []edit{set(features, []any{"Labels"})}, pointers: []string{features + "/0"}},
		{name: "feature of transcriptions", edits: []edit{set(features, []any{"diarization"})}, pointers: []string{features + "/0"}},
		{name: "feature repeated", edits: []edit{set(features, []any{"labels", "scenes", "labels"})}, pointers: []string{features + "/2"}},
		{name: "feature empty string", edits: []edit{set(features, []any{""})}, pointers: []string{features + "/0"}},
		{name: "audio_track negative", edits: []edit{set(ptrInput+"/audio_track", -2)}, pointers: []string{ptrInput + "/audio_track"}},
		{name: "audio_track fractional", edits: []edit{set(ptrInput+"/audio_track", 0.5)}, pointers: []string{ptrInput + "/audio_track"}},
		{name: "type is not a video input field", edits: []edit{set(ptrInput+"/type", "video")}, pointers: []string{ptrInput + "/type"}},
		{name: "language not BCP 47", edits: []edit{set(ptrOptions+"/language", "xx-!!")}, pointers: []string{ptrOptions + "/language"}},
		{name: "confidence_threshold below 0", edits: []edit{set(ptrOptions+"/confidence_threshold", -0.01)}, pointers: []string{ptrOptions + "/confidence_threshold"}},
		{name: "confidence_threshold above 1", edits: []edit{set(ptrOptions+"/confidence_threshold", 1.01)}, pointers: []string{ptrOptions + "/confidence_threshold"}},
		{name: "confidence_threshold percent", edits: []edit{set(ptrOptions+"/confidence_threshold", 50)}, pointers: []string{ptrOptions + "/confidence_threshold"}},
		{name: "confidence_threshold string", edits: []edit{set(ptrOptions+"/confidence_threshold", "0.5")}, pointers: []string{ptrOptions + "/confidence_threshold"}},
		{name: "priority not in enum", edits: []edit{set(ptrOptions+"/priority", "HIGH")}, pointers: []string{ptrOptions + "/priority"}},
		{name: "include_usage string", edits: []edit{set(ptrOptions+"/include_usage", "no")}, pointers: []string{ptrOptions + "/include_usage"}},
		{name: "option of another service", edits: []edit{set(ptrOptions+"/format", "json")}, pointers: []string{ptrOptions + "/format"}},

		{name: "provider lacks a feature", edits: []edit{set(ptrAttrs+"/provider", "narrow"), set(features, []any{"labels", "faces"})}, code: "UNSUPPORTED_OPTION", pointers: []string{ptrAttrs + "/provider"}},
		{name: "provider lacks the service", edits: []edit{set(ptrAttrs+"/provider", "half-off")}, code: "UNSUPPORTED_OPTION", pointers: []string{ptrAttrs + "/provider"}},
		{name: "provider disabled", edits: []edit{set(ptrAttrs+"/provider", "switched-off")}, code: "PROVIDER_DISABLED", pointers: []string{ptrAttrs + "/provider"}},
	})
	t.Cleanup(func() { b.assertNoStarts(t) })
}

func TestCreateRejectsInvalidLLMTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	runInvalid(t, b, "llm-tasks", []invalid{
		{name: "type missing", edits: []edit{del(ptrInput + "/type")}, pointers: []string{ptrInput + "/type"}},
		{name: "type not in enum", edits: []edit{set(ptrInput+"/type", "image")}, pointers: []string{ptrInput + "/type"}},
		{name: "text without text", edits: []edit{del(ptrInput + "/text")}, pointers: []string{ptrInput + "/text"}},
		{name: "text empty", edits: []edit{set(ptrInput+"/text", "")}, pointers: []string{ptrInput + "/text"}},
		{name: "text number", edits: []edit{set(ptrInput+"/text", 3)}, pointers: []string{ptrInput + "/text"}},
		{name: "text with url", edits: []edit{set(ptrInput+"/url", "https://docs.example.com/a.pdf")}, pointers: []string{ptrInput + "/url"}},
		{name: "document without url", edits: []edit{set(ptrInput+"/type", "document"), del(ptrInput + "/text")}, pointers: []string{ptrInput + "/url"}},
		{name: "document url not http", edits: []edit{set(ptrInput+"/type", "document"), del(ptrInput + "/text"), set(ptrInput+"/url", "s3://bucket/a.pdf")}, pointers: []string{ptrInput + "/url"}},
		{name: "prompt missing", edits: []edit{del(ptrInput + "/prompt")}, pointers: []string{ptrInput + "/prompt"}},
		{name: "prompt empty", edits: []edit{set(ptrInput+"/prompt", "")}, pointers: []string{ptrInput + "/prompt"}},
		{name: "prompt blank", edits: []edit{set(ptrInput+"/prompt", "  \n ")}, pointers: []string{ptrInput + "/prompt"}},
		{name: "prompt array", edits: []edit{set(ptrInput+"/prompt", []any{"a"})}, pointers: []string{ptrInput + "/prompt"}},
		{name: "system_prompt number", edits: []edit{set(ptrInput+"/system_prompt", 1)}, pointers: []string{ptrInput + "/system_prompt"}},
		{name: "messages with type text", edits: []edit{set(ptrInput+"/messages", []any{})}, pointers: []string{ptrInput + "/messages"}},
		{name: "messages without a user", edits: []edit{set(ptrInput+"/type", "messages"), del(ptrInput + "/text"), del(ptrInput + "/prompt"),
			set(ptrInput+"/messages", []any{map[string]any{"role": "system", "content": "s"}})}, pointers: []string{ptrInput + "/messages"}},
		{name: "message role unknown", edits: []edit{set(ptrInput+"/type", "messages"), del(ptrInput + "/text"), del(ptrInput + "/prompt"),
			set(ptrInput+"/messages", []any{map[string]any{"role": "tool", "content": "s"}})}, pointers: []string{ptrInput + "/messages/0/role"}},
		{name: "creativity not in enum", edits: []edit{set(ptrOptions+"/creativity", "wild")}, pointers: []string{ptrOptions + "/creativity"}},
		{name: "creativity number", edits: []edit{set(ptrOptions+"/creativity", 0.7)}, pointers: []string{ptrOptions + "/creativity"}},
		{name: "include_usage string", edits: []edit{set(ptrOptions+"/include_usage", "true")}, pointers: []string{ptrOptions + "/include_usage"}},
		{name: "model number", edits: []edit{set(ptrOptions+"/model", 4)}, pointers: []string{ptrOptions + "/model"}},
		{name: "temperature over 2", edits: []edit{set(ptrOptions+"/temperature", 2.1)}, pointers: []string{ptrOptions + "/temperature"}},
		{name: "stop of five", edits: []edit{set(ptrOptions+"/stop", []any{"a", "b", "c", "d", "e"})}, pointers: []string{ptrOptions + "/stop"}},
		{name: "schema not checkable", edits: []edit{set(ptrOptions+"/response_format", map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "n", "schema": map[string]any{"$ref": "https://example.test/s.json"}}})}, pointers: []string{ptrOptions + "/response_format/json_schema/schema"}},
		{name: "priority is not an llm option", edits: []edit{set(ptrOptions+"/priority", "high")}, pointers: []string{ptrOptions + "/priority"}},

		{name: "provider lacks the model", edits: []edit{set(ptrAttrs+"/provider", "llm-only"), set(ptrOptions+"/model", "model-c")}, code: "UNSUPPORTED_OPTION", pointers: []string{ptrOptions + "/model"}},
		{name: "provider lacks the model others offer", edits: []edit{set(ptrAttrs+"/provider", "alpha"), set(ptrOptions+"/model", "model-b")}, code: "UNSUPPORTED_OPTION", pointers: []string{ptrOptions + "/model"}},
		{name: "no provider offers the model", edits: []edit{set(ptrOptions+"/model", "model-c")}, code: "UNSUPPORTED_OPTION", pointers: []string{ptrOptions + "/model"}},
		{name: "provider lacks the service", edits: []edit{set(ptrAttrs+"/provider", "narrow")}, code: "UNSUPPORTED_OPTION", pointers: []string{ptrAttrs + "/provider"}},
		{name: "provider disabled", edits: []edit{set(ptrAttrs+"/provider", "switched-off")}, code: "PROVIDER_DISABLED", pointers: []string{ptrAttrs + "/provider"}},
	})
	t.Cleanup(func() { b.assertNoStarts(t) })
}

// TestCreateRefusesAModelNoProviderOffers: options.model must be one of the
// models the catalog lists, the named provider's or, when routed, some
// provider's of the service; the refusal names the field and the models.
func TestCreateRefusesAModelNoProviderOffers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pol, err := b.store.Routing.CreatePolicy(context.Background(), policy.Policy{Tenant: tenantA, Name: "llm", Strategy: policy.StrategyPrice,
		Services: []jobs.ServiceID{jobs.LLMTasks}, Providers: []policy.Entry{{ProviderID: "alpha", Priority: 1, Weight: 1}}})
	require.NoError(t, err)
	model := ptrOptions + "/model"
	for _, tc := range []struct {
		name   string
		edits  []edit
		models string
	}{
		{"named provider, a model no provider lists", []edit{set(ptrAttrs+"/provider", "llm-only"), set(model, "model-c")}, "model-a, model-b"},
		{"named provider, a model another provider lists", []edit{set(ptrAttrs+"/provider", "alpha"), set(model, "model-b")}, "model-a"},
		{"routed, a model no provider lists", []edit{set(model, "model-c")}, "model-a, model-b"},
		{"routed by a policy, a model no provider lists", []edit{set(ptrAttrs+"/policy_id", pol.ID), set(model, "model-c")}, "model-a, model-b"},
		{"routed, a model in another case", []edit{set(model, "Model-A")}, "model-a, model-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := b.do(t, http.MethodPost, "/v1/llm-tasks", b.writeToken(t), body(t, "llm-tasks", tc.edits...))
			message := requireError(t, r, http.StatusUnprocessableEntity, "UNSUPPORTED_OPTION", model)
			require.True(t, strings.HasPrefix(message, model+": "), "the message starts with the field: %q", message)
			require.Contains(t, message, tc.models)
		})
	}
	t.Cleanup(func() { b.assertNoStarts(t) })
}

// TestCreateRejectsMisnamedFields checks that field names are matched
// exactly: a differently cased name is an unknown field, not an alias.
func TestCreateRejectsMisnamedFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	runInvalid(t, b, "transcriptions", []invalid{
		{name: "input URL", edits: []edit{del(ptrInput + "/url"), set(ptrInput+"/URL", "https://media.example.com/a.mp3")}, pointers: []string{ptrInput + "/URL"}},
		{name: "options Format", edits: []edit{set(ptrOptions+"/Format", "srt")}, pointers: []string{ptrOptions + "/Format"}},
		{name: "webhook Url", edits: []edit{set(ptrWebhook, map[string]any{"Url": "https://hooks.example.com/cb"})}, pointers: []string{ptrWebhook + "/Url"}},
		{name: "data Type", edits: []edit{set(ptrData+"/Type", "transcription-job")}, pointers: []string{ptrData + "/Type"}},
	})
	t.Cleanup(func() { b.assertNoStarts(t) })
}

func TestCreateRejectsOversizedBody(t *testing.T) {
	t.Parallel()
	b := setup(t)
	huge := body(t, "translations", set(ptrInput+"/content", strings.Repeat("a", 8<<20)))

	t.Run("with Content-Length", func(t *testing.T) {
		t.Parallel()
		r := b.do(t, http.MethodPost, "/v1/translations", b.writeToken(t), huge)
		requireError(t, r, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
	})
	t.Run("chunked", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		buf.WriteString(`{"data": {"type": "translation-job", "attributes": {"input": {"type": "text", "target_language": "de", "content": "`)
		buf.WriteString(strings.Repeat("a", 8<<20))
		buf.WriteString(`"}}}}`)
		// An io.Reader of unknown length is sent chunked, so only reading
		// the body can tell it is too large.
		r := b.do(t, http.MethodPost, "/v1/translations", b.writeToken(t), io.MultiReader(&buf))
		requireError(t, r, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
	})
	t.Run("just under the limit is read, then judged by field limits", func(t *testing.T) {
		t.Parallel()
		// 8 MiB in all, content included: not 413, but the input is over
		// its own 512 KiB limit.
		base := len(`{"data":{"attributes":{"input":{"content":"","target_language":"de","type":"text"}},"type":"translation-job"}}`)
		fits := body(t, "translations", set(ptrInput+"/content", strings.Repeat("a", 8<<20-base)))
		r := b.do(t, http.MethodPost, "/v1/translations", b.writeToken(t), fits)
		requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", ptrInput)
	})
}
