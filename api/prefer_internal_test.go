package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPreferredWait(t *testing.T) {
	cases := []struct {
		name   string
		header []string
		wait   int
		ok     bool
	}{
		{"none", nil, 0, false},
		{"plain", []string{"wait=5"}, 5, true},
		{"one", []string{"wait=1"}, 1, true},
		{"the most", []string{"wait=60"}, 60, true},
		{"capped", []string{"wait=61"}, 60, true},
		{"capped, huge", []string{"wait=99999999999999999999999"}, 60, true},
		{"leading zeros", []string{"wait=007"}, 7, true},
		{"case-insensitive name", []string{"WAIT=5"}, 5, true},
		{"quoted", []string{`wait="5"`}, 5, true},
		{"spaces around =", []string{"wait = 5"}, 5, true},
		{"among others", []string{"respond-async, wait=10, return=minimal"}, 10, true},
		{"with parameters", []string{`return=minimal; foo="a,b;c", wait=10;x=1`}, 10, true},
		{"quoted comma", []string{`handling="lenient, wait=3", wait=4`}, 4, true},
		{"escaped quote", []string{`x="a\",wait=3", wait=4`}, 4, true},
		{"several header lines", []string{"respond-async", "wait=12"}, 12, true},
		{"empty elements", []string{" , ,wait=2,"}, 2, true},
		{"first counts", []string{"wait=3, wait=30"}, 3, true},
		{"first counts across lines", []string{"wait=abc", "wait=30"}, 0, false},
		{"zero", []string{"wait=0"}, 0, false},
		{"zeros", []string{"wait=000"}, 0, false},
		{"negative", []string{"wait=-1"}, 0, false},
		{"signed", []string{"wait=+5"}, 0, false},
		{"fraction", []string{"wait=1.5"}, 0, false},
		{"word", []string{"wait=abc"}, 0, false},
		{"no value", []string{"wait"}, 0, false},
		{"empty value", []string{"wait="}, 0, false},
		{"unterminated quote", []string{`wait="5`}, 0, false},
		{"other preferences only", []string{"respond-async, return=representation"}, 0, false},
		{"a longer name", []string{"waiting=5"}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.header {
				h.Add("Prefer", v)
			}
			wait, ok := preferredWait(h)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.wait, wait)
		})
	}
}

func TestPreferences(t *testing.T) {
	h := http.Header{}
	h.Add("Prefer", `Respond-Async, return=minimal; a=b, handling="x\\y\"z", bad name=1, ok=`)
	assert.Equal(t, map[string]string{"respond-async": "", "return": "minimal", "handling": `x\y"z`, "ok": ""}, preferences(h))
}
