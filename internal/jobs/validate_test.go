package jobs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLanguageCode(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"en", "de", "pt-BR", "zh-Hant", "zh-Hant-TW", "es-419", "sr-Latn-RS", "gsw"} {
		require.Nil(t, languageCode(code, "/x", false), code)
	}
	for _, code := range []string{"e", "english", "en-", "12", "en US", "en_US", "auto"} {
		err := languageCode(code, "/x", false)
		require.NotNil(t, err, code)
		require.Equal(t, "/x", err.Pointer)
	}
	require.Nil(t, languageCode("auto", "/x", true))
	require.NotNil(t, languageCode("Auto!", "/x", true))
}
