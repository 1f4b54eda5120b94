package api

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNegotiate(t *testing.T) {
	t.Parallel()
	transcript := []string{mimeJSON, mimeSRT, mimeVTT}
	translation := []string{mimeJSON, mimeText}
	cases := []struct {
		accept    string
		offered   []string
		preferred string
		want      string
	}{
		{"", transcript, mimeSRT, mimeSRT},
		{"text/vtt", transcript, mimeJSON, mimeVTT},
		{"TEXT/VTT", transcript, mimeJSON, mimeVTT},
		{"text/vtt; charset=utf-8", transcript, mimeJSON, mimeVTT},
		{"text/srt;q=0.5, text/vtt;q=0.9", transcript, mimeJSON, mimeVTT},
		{"text/vtt;q=0.9, text/srt;q=0.5", transcript, mimeJSON, mimeVTT},
		{"text/srt ; q=0.7 , text/vtt ; q=0.71", transcript, mimeJSON, mimeVTT},
		{"application/json;q=0.1, text/srt", transcript, mimeVTT, mimeSRT},
		{"text/vtt;level=1;q=0.4, text/srt;q=0.3", transcript, mimeJSON, mimeVTT},
		{"text/srt, text/vtt", transcript, mimeJSON, mimeSRT}, // equal q: the first named
		{"*/*", transcript, mimeVTT, mimeVTT},
		{"text/*", transcript, mimeSRT, mimeSRT},
		{"application/xml", transcript, mimeSRT, mimeSRT},
		{"text/vtt;q=0", transcript, mimeSRT, mimeSRT},
		{"text/vtt;q=0, application/json", transcript, mimeSRT, mimeJSON},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", transcript, mimeVTT, mimeVTT},
		{"text/plain", translation, mimeJSON, mimeText},
		{"text/plain;q=0.2, application/json;q=0.3", translation, mimeJSON, mimeJSON},
		{"text/plain", []string{mimeJSON}, mimeJSON, mimeJSON},
		{",,;q=1,", transcript, mimeJSON, mimeJSON},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, negotiate(tc.accept, tc.offered, tc.preferred), "Accept: %q", tc.accept)
	}
}

func TestValidApplication(t *testing.T) {
	t.Parallel()
	for app, ok := range map[string]bool{
		"":                            true, // absent
		"ab":                          true,
		"my-app":                      true,
		"a1":                          true,
		"a-1-b":                       true,
		"a" + strings.Repeat("b", 62): true,
		"a":                           false,
		"a" + strings.Repeat("b", 63): false,
		"My-app":                      false,
		"my-app-":                     false,
		"-my-app":                     false,
		"1app":                        false,
		"my_app":                      false,
		"my app":                      false,
		"my-app\n":                    false,
	} {
		err := validApplication(app)
		if ok {
			require.Nil(t, err, "%q", app)
			continue
		}
		require.NotNil(t, err, "%q", app)
		require.Equal(t, 422, err.Status)
		require.Contains(t, err.Message, "X-Application")
	}
}
