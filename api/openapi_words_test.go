package api_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpenAPITranscriptionSegmentWords: the document describes a
// segment's words (docs/api.md, Extensions), and rejects words that lack
// their times or have a confidence out of range.
func TestOpenAPITranscriptionSegmentWords(t *testing.T) {
	t.Parallel()
	v, err := openAPI()
	require.NoError(t, err)
	validate := func(words string) bool {
		req := httptest.NewRequest(http.MethodGet, "/v1/transcriptions/0190a7c3-0000-7000-8000-000000000001/result", nil)
		body := `{"format":"json","duration":2,"segments":[{"start":0.1,"end":1.2,"text":"hello world"` + words + `}]}`
		answer := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader([]byte(body))), Request: req}
		ok, errs := v.ValidateHttpResponse(req, answer)
		if !ok {
			t.Logf("%s:\n%s", words, describe(errs))
		}
		return ok
	}
	require.True(t, validate(``), "a segment without words")
	require.True(t, validate(`,"words":[{"start":0.1,"end":0.5,"text":"hello","confidence":0.9},{"start":0.6,"end":1.2,"text":"world"}]`))
	require.False(t, validate(`,"words":[{"start":0.1,"text":"hello"}]`), "a word without its end")
	require.False(t, validate(`,"words":[{"start":0.1,"end":0.5,"text":"hello","confidence":1.5}]`), "a confidence over 1")
	require.False(t, validate(`,"words":null`), "words are absent, never null")
}
