package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// bad marks where withBad puts the text under test.
const bad = "@BAD@"

// withBad encodes doc as JSON and replaces each bad marker with text as is
// (raw bytes, or escapes such as \ud800), which json.Marshal cannot write.
func withBad(t *testing.T, doc any, text string) []byte {
	t.Helper()
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	require.Contains(t, string(raw), bad)
	return bytes.ReplaceAll(raw, []byte(bad), []byte(text))
}

// requireValidJSON checks a response body is valid JSON text: well-formed
// and UTF-8 (json.Valid alone accepts invalid UTF-8 in strings).
func requireValidJSON(t *testing.T, r *response) {
	t.Helper()
	require.True(t, utf8.Valid(r.Body), "body is not UTF-8: %q", r.Body)
	require.True(t, json.Valid(r.Body), "body is not JSON: %s", r.Body)
}

// badTexts are the ways a JSON string can hold text that is not Unicode.
var badTexts = map[string]string{
	"invalid byte":              "caf\xff",
	"bad continuation":          "\xc3\x28",
	"truncated sequence":        "ab\xe2\x82",
	"encoded surrogate":         "\xed\xa0\x80",
	"overlong encoding":         "\xc0\xaf",
	"lone high surrogate":       `x\ud800y`,
	"lone low surrogate":        `\udc00`,
	"high surrogate, then text": `\ud83c\u0041`,
	"high surrogate at the end": `\uD83C`,
}

func TestCreateRejectsInvalidUnicode(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := func(headers map[string]any) edit {
		return set(ptrWebhook, map[string]any{"url": "https://hooks.example.com/cb", "headers": headers})
	}
	type place struct {
		name     string
		resource string
		edits    []edit
		pointer  string
	}
	places := []place{
		{"input content", "translations", []edit{set(ptrInput+"/content", "Hello "+bad)}, ptrInput + "/content"},
		{"meta client value", "translations", []edit{set(ptrMeta+"/client", map[string]any{"note": bad})}, ptrMeta + "/client/note"},
		{"nested meta client value", "translations", []edit{set(ptrMeta+"/client", map[string]any{"a/b": []any{1, map[string]any{"x": bad}}})}, ptrMeta + "/client/a~1b/1/x"},
		{"webhook header value", "translations", []edit{hook(map[string]any{"X-Token": bad})}, ptrWebhook + "/headers/X-Token"},
		{"object key", "translations", []edit{set(ptrMeta+"/client", map[string]any{"k" + bad: "v"})}, ptrMeta + "/client"},
		{"webhook header name", "translations", []edit{hook(map[string]any{"X-" + bad: "v"})}, ptrWebhook + "/headers"},
		{"array element", "video-analyses", []edit{set(ptrInput+"/features", []any{"labels", bad})}, ptrInput + "/features/1"},
		{"data type", "translations", []edit{set(ptrData+"/type", bad)}, ptrData + "/type"},
		{"ignored top-level member", "translations", []edit{set("/jsonapi", map[string]any{"version": bad})}, "/jsonapi/version"},
	}
	for _, p := range places {
		for name, text := range badTexts {
			t.Run(p.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				raw := withBad(t, body(t, p.resource, p.edits...), text)
				r := b.do(t, http.MethodPost, "/v1/"+p.resource, b.writeToken(t), raw)
				msg := requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", p.pointer)
				require.True(t, strings.HasPrefix(msg, p.pointer+": "), "the message starts with the pointer: %q", msg)
				require.True(t, utf8.Valid(r.Body))
			})
		}
	}
	t.Cleanup(func() {
		b.assertNoStarts(t)
		r := b.do(t, http.MethodGet, "/v1/jobs", b.readToken(t), nil)
		r.requireStatus(t, http.StatusOK)
		requireValidJSON(t, r)
		require.Equal(t, 0, len(r.object(t)["data"].([]any)), "no job was created: %s", r.Body)
	})
}

// TestCreateKeepsUnicode checks that valid non-ASCII text, raw or escaped,
// is accepted and echoed exactly, and every GET of the job is valid JSON.
func TestCreateKeepsUnicode(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const content = "größe 🎉 日本語 \u00a0 \ufffd"
	raw := withBad(t, body(t, "translations",
		set(ptrInput+"/content", content+" "+bad),
		set(ptrMeta+"/client", map[string]any{"größe": "🎉", "escaped": bad, "literal": `\ud800`}),
		set(ptrWebhook, map[string]any{"url": "https://hooks.example.com/cb", "headers": map[string]any{"X-Note": "größe"}}),
	), `\ud83c\udf89 \u00e9 \uFFFD`)

	r := b.do(t, http.MethodPost, "/v1/translations", b.writeToken(t), raw)
	r.requireStatus(t, http.StatusAccepted)
	requireValidJSON(t, r)
	id, ok := r.data(t)["id"].(string)
	require.True(t, ok)

	got := b.do(t, http.MethodGet, jobPath("translations", id), b.readToken(t), nil)
	got.requireStatus(t, http.StatusOK)
	requireValidJSON(t, got)
	for _, resp := range []*response{r, got} {
		data := resp.data(t)
		input := data["attributes"].(map[string]any)["input"].(map[string]any)
		require.Equal(t, content+" 🎉 é \ufffd", input["content"])
		client := data["meta"].(map[string]any)["client"].(map[string]any)
		require.Equal(t, map[string]any{"größe": "🎉", "escaped": "🎉 é \ufffd", "literal": `\ud800`}, client)
	}

	list := b.do(t, http.MethodGet, "/v1/jobs", b.readToken(t), nil)
	list.requireStatus(t, http.StatusOK)
	requireValidJSON(t, list)
	require.Contains(t, string(list.Body), "größe")
}

func TestWritesRejectInvalidUnicode(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tok := polTokens(t, b)
	super := superAdminToken(t, b, "services:write", "providers:write")
	languages := []any{"en", bad}
	cases := []struct {
		name, method, path, token string
		doc                       any
		pointer                   string
	}{
		{"policy name", http.MethodPost, "/v1/policies", tok.acme, polDoc("", polAttrs(t, set("/name", bad))), "/data/attributes/name"},
		{"policy description", http.MethodPost, "/v1/policies", tok.acme, polDoc("", polAttrs(t, set("/description", "x"+bad))), "/data/attributes/description"},
		{"policy condition language", http.MethodPost, "/v1/policies", tok.acme,
			polDoc("", polAttrs(t, set("/providers/0/conditions/languages", languages))), "/data/attributes/providers/0/conditions/languages/1"},
		{"scoped policy name", http.MethodPut, "/v1/services/transcriptions/applications/mobile/policy", tok.acme,
			polDoc("", polAttrs(t, del("/service"), set("/name", bad))), "/data/attributes/name"},
		{"tenant services key", http.MethodPost, "/v1/tenants", super,
			tenantDoc("fresh", map[string]any{"services": map[string]any{bad: map[string]any{"enabled": true}}}), "/data/attributes/services"},
		{"tenant id", http.MethodPost, "/v1/tenants", super, tenantDoc(bad, nil), "/data/id"},
		{"service status", http.MethodPatch, "/v1/services/transcriptions", super,
			statusDoc("service", "transcriptions", map[string]any{"status": bad}), "/data/attributes/status"},
		{"provider services key", http.MethodPatch, "/v1/providers/alpha", super,
			statusDoc("provider", "alpha", map[string]any{"services": map[string]any{"x" + bad: map[string]any{"status": "active"}}}), "/data/attributes/services"},
	}
	for _, tc := range cases {
		for kind, text := range map[string]string{"raw byte": "\xff", "lone surrogate": `\udfff`, "NUL": `\u0000`} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				t.Parallel()
				r := b.do(t, tc.method, tc.path, tc.token, withBad(t, tc.doc, text))
				msg := requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", tc.pointer)
				require.True(t, strings.HasPrefix(msg, tc.pointer+": "), "the message starts with the pointer: %q", msg)
			})
		}
	}

	t.Run("policy with non-ASCII name", func(t *testing.T) {
		t.Parallel()
		data := b.polCreate(t, tok.acme, polAttrs(t, set("/name", "Größe 🎉"), set("/description", `\ud800 literally`)))
		got := b.polGet(t, tok.acmeRead, polID(t, data), http.StatusOK)
		requireValidJSON(t, got)
		require.Equal(t, "Größe 🎉", polAttributes(t, got.data(t))["name"])
		require.Equal(t, `\ud800 literally`, polAttributes(t, got.data(t))["description"])
	})
}
