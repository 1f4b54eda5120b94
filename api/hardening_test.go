package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Requests an attacker sends to find a crash or a slow path: each gets a
// clear 4xx naming what is wrong, never a 500 (docs/reliability.md).

func TestDeeplyNestedBodiesAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// 50,000 levels of nesting in the client's meta: past the decoder's
	// depth limit, well within the body size limit.
	nested := strings.Repeat("[", 50_000) + strings.Repeat("]", 50_000)
	raw := strings.Replace(validBodies["llm-tasks"], `"data":`, `"meta":{"client":{"deep":`+nested+`}},"data":`, 1)
	r := b.do(t, http.MethodPost, "/v1/llm-tasks", b.writeToken(t), raw, "Content-Type", "application/json")
	require.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)
	require.Equal(t, "MALFORMED_JSON", r.object(t)["error"].(map[string]any)["code"])
}

func TestHugeArraysAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	features := make([]any, 100_000)
	for i := range features {
		features[i] = "labels"
	}
	r := b.do(t, http.MethodPost, "/v1/video-analyses", b.writeToken(t), body(t, "video-analyses", set(ptrInput+"/features", features)))
	r.requireStatus(t, http.StatusUnprocessableEntity)
	require.Contains(t, string(r.Body), "/input/features", "the field is named")
}

func TestOversizedTokensAreRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, size := range []int{16 << 10, 256 << 10} {
		token := b.writeToken(t) + strings.Repeat("A", size)
		r := b.do(t, http.MethodGet, "/v1/jobs", token, nil)
		require.Equal(t, http.StatusUnauthorized, r.Status, "a %d-byte token: %s", size, r.Body)
	}
	r := b.do(t, http.MethodGet, "/v1/jobs", strings.Repeat("eyJ.", 10_000), nil)
	require.Equal(t, http.StatusUnauthorized, r.Status)
}
