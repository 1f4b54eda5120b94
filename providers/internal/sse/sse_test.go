package sse_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/providers/internal/sse"
)

func events(t *testing.T, r *sse.Reader) []string {
	t.Helper()
	var out []string
	for {
		data, ok := r.Next()
		if !ok {
			return out
		}
		out = append(out, data)
	}
}

func TestReaderReadsTheDataOfEachEvent(t *testing.T) {
	stream := ": a comment\n\nevent: message_start\nid: 1\ndata: {\"a\":1}\n\n" +
		"data:first\ndata: second\n\n\n\nevent: ping\n\ndata: [DONE]"
	r := sse.NewReader(strings.NewReader(stream))
	require.Equal(t, []string{`{"a":1}`, "first\nsecond", "[DONE]"}, events(t, r),
		"comments, names and ids skipped; data lines joined; events without data skipped; the last one without its blank line counts")
	require.NoError(t, r.Err())
}

func TestReaderReportsABrokenStream(t *testing.T) {
	broken := errors.New("connection reset")
	r := sse.NewReader(io.MultiReader(strings.NewReader("data: one\n\ndata: tw"), iotest.ErrReader(broken)))
	require.Equal(t, []string{"one"}, events(t, r), "an event cut short is not one")
	require.ErrorIs(t, r.Err(), broken)
}
