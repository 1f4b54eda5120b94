package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// errorPointer is the error.pointer of an error answer, and whether it
// has one (docs/api.md, Errors).
func errorPointer(t *testing.T, r *response) (string, bool) {
	t.Helper()
	var body struct {
		Error map[string]any `json:"error"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &body), "body: %s", r.Body)
	require.NotNil(t, body.Error, "an error answer: %s", r.Body)
	p, ok := body.Error["pointer"]
	if !ok {
		return "", false
	}
	s, isString := p.(string)
	require.True(t, isString, "error.pointer is a string: %s", r.Body)
	require.NotEmpty(t, s, "error.pointer is absent rather than empty: %s", r.Body)
	return s, true
}

// TestValidationErrorsCarryThePointer: a create request refused for one
// member answers that member's JSON pointer as error.pointer, the one its
// message starts with.
func TestValidationErrorsCarryThePointer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		name     string
		resource string
		edits    []edit
		code     string
		pointer  string
	}{
		{"input missing", "transcriptions", []edit{del(ptrInput)}, "VALIDATION_ERROR", ptrInput},
		{"input url not a URL", "transcriptions", []edit{set(ptrInput+"/url", "talk.mp3")}, "VALIDATION_ERROR", ptrInput + "/url"},
		{"input url missing", "transcriptions", []edit{del(ptrInput + "/url")}, "VALIDATION_ERROR", ptrInput + "/url"},
		{"options format not in enum", "transcriptions", []edit{set(ptrOptions+"/format", "txt")}, "VALIDATION_ERROR", ptrOptions + "/format"},
		{"options priority not in enum", "translations", []edit{set(ptrOptions+"/priority", "urgent")}, "VALIDATION_ERROR", ptrOptions + "/priority"},
		{"options language wrong type", "transcriptions", []edit{set(ptrOptions+"/language", 1)}, "VALIDATION_ERROR", ptrOptions + "/language"},
		{"unknown option with an escaped name", "transcriptions", []edit{set(ptrOptions+"/a~0b~1c", true)}, "VALIDATION_ERROR", ptrOptions + "/a~0b~1c"},
		{"text without content", "translations", []edit{del(ptrInput + "/content")}, "VALIDATION_ERROR", ptrInput + "/content"},
		{"webhook url ftp", "transcriptions", []edit{set(ptrWebhook, map[string]any{"url": "ftp://hooks.example.com/cb"})}, "VALIDATION_ERROR", ptrWebhook + "/url"},
		{"data.type of another resource", "transcriptions", []edit{set(ptrData+"/type", "translation-job")}, "VALIDATION_ERROR", ptrData + "/type"},
		{"meta.client string", "transcriptions", []edit{set(ptrMeta+"/client", "order-17")}, "VALIDATION_ERROR", ptrMeta + "/client"},
		{"unknown provider", "transcriptions", []edit{set(ptrAttrs+"/provider", "no-such-provider")}, "UNKNOWN_PROVIDER", ptrAttrs + "/provider"},
		{"unknown policy", "transcriptions", []edit{set(ptrAttrs+"/policy_id", unknownPolicy)}, "UNKNOWN_POLICY", ptrAttrs + "/policy_id"},
		{"provider lacks diarization", "transcriptions", []edit{set(ptrAttrs+"/provider", "narrow"), set(ptrOptions+"/diarization", true)}, "UNSUPPORTED_OPTION", ptrAttrs + "/provider"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := b.do(t, http.MethodPost, "/v1/"+tc.resource, b.writeToken(t), body(t, tc.resource, tc.edits...))
			requireError(t, r, http.StatusUnprocessableEntity, tc.code, tc.pointer)
			pointer, ok := errorPointer(t, r)
			require.True(t, ok, "error.pointer is given: %s", r.Body)
			require.Equal(t, tc.pointer, pointer)
		})
	}
	t.Cleanup(func() { b.assertNoStarts(t) })
}

// TestErrorsWithoutAMemberHaveNoPointer: an error about no one member of
// the body (a header, a query parameter, two members together, or no
// member at all) has no error.pointer, and an accepted request no error.
func TestErrorsWithoutAMemberHaveNoPointer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ok := b.do(t, http.MethodPost, "/v1/transcriptions", b.writeToken(t), body(t, "transcriptions"))
	ok.requireStatus(t, http.StatusAccepted)
	require.NotContains(t, ok.object(t), "error")

	cases := []struct {
		name   string
		do     func(t *testing.T) *response
		status int
		code   string
	}{
		{"malformed JSON", func(t *testing.T) *response {
			return b.do(t, http.MethodPost, "/v1/transcriptions", b.writeToken(t), `{"data": {`)
		}, http.StatusBadRequest, "MALFORMED_JSON"},
		{"bad X-Application header", func(t *testing.T) *response {
			return b.do(t, http.MethodPost, "/v1/transcriptions", b.writeToken(t), body(t, "transcriptions"), "X-Application", "My-App")
		}, http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"provider and policy_id", func(t *testing.T) *response {
			return b.do(t, http.MethodPost, "/v1/transcriptions", b.writeToken(t),
				body(t, "transcriptions", set(ptrAttrs+"/provider", "alpha"), set(ptrAttrs+"/policy_id", unknownPolicy)))
		}, http.StatusUnprocessableEntity, "PROVIDER_AND_POLICY"},
		{"bad query parameter", func(t *testing.T) *response {
			return b.do(t, http.MethodGet, "/v1/jobs?filter[status]=bogus", b.readToken(t), nil)
		}, http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"no token", func(t *testing.T) *response {
			return b.do(t, http.MethodPost, "/v1/transcriptions", "", body(t, "transcriptions"))
		}, http.StatusUnauthorized, "UNAUTHORIZED"},
		{"unknown job", func(t *testing.T) *response {
			return b.do(t, http.MethodGet, jobPath("transcriptions", unknownPolicy), b.readToken(t), nil)
		}, http.StatusNotFound, "NOT_FOUND"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.do(t)
			requireError(t, r, tc.status, tc.code)
			pointer, has := errorPointer(t, r)
			require.False(t, has, "no error.pointer, got %q", pointer)
		})
	}
}
