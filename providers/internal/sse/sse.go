// Package sse reads the data of server-sent events, the format vendors
// stream answers in (https://html.spec.whatwg.org/multipage/server-sent-events.html;
// docs/providers.md). Only data lines matter to the adapters: comments,
// event names and ids are skipped.
package sse

import (
	"bufio"
	"io"
	"strings"
)

// MaxLine caps one line of a stream.
const MaxLine = 4 << 20

// Reader reads a stream's events one at a time.
type Reader struct {
	lines *bufio.Scanner
	data  []string
}

// NewReader reads the events of r.
func NewReader(r io.Reader) *Reader {
	lines := bufio.NewScanner(r)
	lines.Buffer(make([]byte, 64<<10), MaxLine)
	return &Reader{lines: lines}
}

// Next is the data of the next event that has some, its data lines joined
// by newlines; false at the stream's end or a read error (Err). A last
// event without its closing blank line counts.
func (r *Reader) Next() (string, bool) {
	for r.lines.Scan() {
		line := r.lines.Text()
		if line != "" {
			if v, ok := strings.CutPrefix(line, "data:"); ok {
				r.data = append(r.data, strings.TrimPrefix(v, " "))
			}
			continue
		}
		if len(r.data) > 0 {
			return r.take(), true
		}
	}
	if r.lines.Err() == nil && len(r.data) > 0 {
		return r.take(), true
	}
	return "", false
}

func (r *Reader) take() string {
	data := strings.Join(r.data, "\n")
	r.data = r.data[:0]
	return data
}

// Err is the error that ended the stream, nil at its end.
func (r *Reader) Err() error { return r.lines.Err() }
