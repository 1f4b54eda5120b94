package batches

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"unicode/utf8"

	"github.com/ai-job-gateway/gateway/internal/netguard"
)

// The limits of a batch's input file (docs/api.md, Batches).
const (
	MaxFileBytes = 100 << 20
	MaxFileItems = 50000
	// MaxLineBytes bounds one line, as a single create's body is bounded.
	MaxLineBytes = 8 << 20
)

// FileError is why an input file cannot be read as a whole: it is out of
// reach, too large, or has too many items.
type FileError struct{ Reason string }

func (e *FileError) Error() string { return e.Reason }

// Fetch copies the file at url into dst, refused past maxBytes. What the
// client or the server refuses is a FileError; dst failing is not.
func Fetch(ctx context.Context, client *http.Client, url string, maxBytes int64, dst io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return &FileError{fmt.Sprintf("input_file_url: %v", err)}
	}
	resp, err := client.Do(req)
	if err != nil {
		if reason := netguard.Refusal(err); reason != "" {
			return &FileError{fmt.Sprintf("input_file_url: %s; the gateway only reads files at public addresses", reason)}
		}
		return &FileError{fmt.Sprintf("input_file_url could not be read: %v", err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &FileError{fmt.Sprintf("input_file_url answered %s", resp.Status)}
	}
	if resp.ContentLength > maxBytes {
		return &FileError{fmt.Sprintf("input_file_url is %d bytes; a batch file is at most %d", resp.ContentLength, maxBytes)}
	}
	n, err := io.Copy(&writerOnly{dst}, io.LimitReader(resp.Body, maxBytes+1))
	var werr *writeError
	switch {
	case errors.As(err, &werr):
		return werr.err
	case err != nil:
		return &FileError{fmt.Sprintf("input_file_url could not be read: %v", err)}
	case n > maxBytes:
		return &FileError{fmt.Sprintf("input_file_url is over %d bytes, the most a batch file has", maxBytes)}
	}
	return nil
}

// writerOnly tells a failure to write from one to read.
type writerOnly struct{ w io.Writer }

type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

func (w *writerOnly) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		return n, &writeError{err}
	}
	return n, nil
}

// Line is an item of an input file: its line (from 1), its index among
// the items (from 0), and the JSON object, or why the line is no item.
type Line struct {
	Number int
	Item   int
	Data   json.RawMessage
	Err    error
}

// ReadItems calls fn with each item of a JSONL file in order: every line
// that is not blank. A line that is not UTF-8, not one JSON object, or
// over MaxLineBytes comes with Err. Past maxItems items it stops with a
// FileError; an error of fn stops it too.
func ReadItems(r io.Reader, maxItems int, fn func(Line) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	number, item := 0, 0
	var buf []byte
	for {
		buf = buf[:0]
		tooLong := false
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			if !tooLong {
				if len(buf)+len(chunk) > MaxLineBytes+2 { // \r\n
					tooLong, buf = true, buf[:0]
				} else {
					buf = append(buf, chunk...)
				}
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return &FileError{fmt.Sprintf("input_file_url could not be read: %v", err)}
		}
		if len(buf) == 0 && !tooLong && errors.Is(err, io.EOF) {
			return nil
		}
		number++
		data := bytes.TrimSpace(buf)
		if len(data) > 0 || tooLong {
			if item == maxItems {
				return &FileError{fmt.Sprintf("input_file_url has more than %d items (line %d); a batch has at most %d", maxItems, number, maxItems)}
			}
			line := Line{Number: number, Item: item, Data: bytes.Clone(data)}
			switch {
			case tooLong:
				line.Data, line.Err = nil, fmt.Errorf("line %d is over %d bytes", number, MaxLineBytes)
			case !utf8.Valid(data):
				line.Data, line.Err = nil, fmt.Errorf("line %d is not UTF-8", number)
			case data[0] != '{' || !json.Valid(data):
				line.Data, line.Err = nil, fmt.Errorf("line %d is not a JSON object", number)
			}
			item++
			if err := fn(line); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// CountItems counts the items of a JSONL file, checking it has at most
// maxItems, and rewinds it.
func CountItems(f *os.File, maxItems int) (int, error) {
	n := 0
	if err := ReadItems(f, maxItems, func(Line) error { n++; return nil }); err != nil {
		return 0, err
	}
	_, err := f.Seek(0, io.SeekStart)
	return n, err
}
