package console

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConsolePreview: a preview shows <, > and & as themselves (the
// template escapes them), keeps every other escape, and is cut.
func TestConsolePreview(t *testing.T) {
	t.Parallel()
	require.Equal(t, "{\n  \"a\": \"<b> & \\\\u003c \\\" \\n\"\n}", preview(json.RawMessage(`{"a":"\u003cb\u003e \u0026 \\u003c \" \n"}`)))
	require.Empty(t, preview(nil))
	require.Empty(t, preview(json.RawMessage("null")))
	long := preview(json.RawMessage(`"` + strings.Repeat("é", previewBytes) + `"`))
	require.True(t, strings.HasSuffix(long, "(cut: the whole document is in the API's answer)"))
	require.Less(t, len(long), previewBytes+100)
}
