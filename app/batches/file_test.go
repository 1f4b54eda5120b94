package batches_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/app/batches"
	"github.com/ai-job-gateway/gateway/internal/netguard"
)

func readAll(t *testing.T, file string, maxItems int) ([]batches.Line, error) {
	t.Helper()
	var out []batches.Line
	err := batches.ReadItems(strings.NewReader(file), maxItems, func(l batches.Line) error {
		out = append(out, l)
		return nil
	})
	return out, err
}

func TestReadItemsSkipsBlankLinesAndNumbersTheRest(t *testing.T) {
	t.Parallel()
	file := "{\"custom_id\":\"a\"}\n\n   \r\n{\"custom_id\":\"b\"}\r\n[1]\n{\"x\":\n\xff\xfe\n\t\n{\"custom_id\":\"c\"}"
	lines, err := readAll(t, file, 10)
	require.NoError(t, err)
	require.Len(t, lines, 6)
	type got struct {
		number, item int
		data, err    string
	}
	var all []got
	for _, l := range lines {
		g := got{number: l.Number, item: l.Item, data: string(l.Data)}
		if l.Err != nil {
			g.err = l.Err.Error()
		}
		all = append(all, g)
	}
	require.Equal(t, []got{
		{1, 0, `{"custom_id":"a"}`, ""},
		{4, 1, `{"custom_id":"b"}`, ""},
		{5, 2, "", "line 5 is not a JSON object"},
		{6, 3, "", "line 6 is not a JSON object"},
		{7, 4, "", "line 7 is not UTF-8"},
		{9, 5, `{"custom_id":"c"}`, ""},
	}, all)
}

func TestReadItemsCapsItemsNotBlankLines(t *testing.T) {
	t.Parallel()
	_, err := readAll(t, "{}\n\n\n{}\n\n", 2)
	require.NoError(t, err)
	_, err = readAll(t, "{}\n{}\n\n{}\n", 2)
	var fileErr *batches.FileError
	require.ErrorAs(t, err, &fileErr)
	require.Contains(t, err.Error(), "more than 2 items (line 4)")
	lines, err := readAll(t, "", 2)
	require.NoError(t, err)
	require.Empty(t, lines)
}

func TestReadItemsRefusesALongLineAndGoesOn(t *testing.T) {
	t.Parallel()
	long := `{"x":"` + strings.Repeat("a", batches.MaxLineBytes) + `"}`
	lines, err := readAll(t, "{}\n"+long+"\n{\"y\":1}\n", 10)
	require.NoError(t, err)
	require.Len(t, lines, 3)
	require.EqualError(t, lines[1].Err, "line 2 is over 8388608 bytes")
	require.Equal(t, 3, lines[2].Number)
	require.JSONEq(t, `{"y":1}`, string(lines[2].Data))
}

func TestReadItemsStopsOnTheCallersError(t *testing.T) {
	t.Parallel()
	stop := errors.New("stop")
	err := batches.ReadItems(strings.NewReader("{}\n{}\n"), 10, func(batches.Line) error { return stop })
	require.ErrorIs(t, err, stop)
}

func TestFetchCapsTheSizeAndNamesTheURL(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok.jsonl":
			_, _ = w.Write([]byte("{}\n{}\n"))
		case "/big.jsonl":
			w.Header().Set("Content-Length", "100")
			_, _ = w.Write(bytes.Repeat([]byte("x"), 100))
		case "/chunked.jsonl":
			w.(http.Flusher).Flush() // no Content-Length
			_, _ = w.Write(bytes.Repeat([]byte("x"), 100))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	private := netguard.NewMediaClient(true, 5*time.Second)
	var buf bytes.Buffer
	require.NoError(t, batches.Fetch(ctx, private, srv.URL+"/ok.jsonl", 10, &buf))
	require.Equal(t, "{}\n{}\n", buf.String())

	var fileErr *batches.FileError
	for path, want := range map[string]string{
		"/big.jsonl":     "input_file_url is 100 bytes; a batch file is at most 50",
		"/chunked.jsonl": "input_file_url is over 50 bytes",
		"/missing":       "input_file_url answered 404 Not Found",
	} {
		err := batches.Fetch(ctx, private, srv.URL+path, 50, &bytes.Buffer{})
		require.ErrorAs(t, err, &fileErr, path)
		require.Contains(t, err.Error(), want, path)
	}
	// Public addresses only, unless private networks are allowed.
	err := batches.Fetch(ctx, netguard.NewMediaClient(false, 5*time.Second), srv.URL+"/ok.jsonl", 10, &bytes.Buffer{})
	require.ErrorAs(t, err, &fileErr)
	require.Contains(t, err.Error(), "loopback")
	require.Contains(t, err.Error(), "only reads files at public addresses")
}
