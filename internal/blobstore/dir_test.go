package blobstore

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gocloud.dev/blob/driver"
)

var testSigningKey = []byte("0123456789abcdef0123456789abcdef")

// openDirStore opens a Dir store whose links point at a test server running
// its Handler.
func openDirStore(t *testing.T) (*Store, string) {
	t.Helper()
	var handler http.Handler
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(server.Close)
	dir := filepath.Join(t.TempDir(), "blobs")
	s, err := Open(context.Background(), Config{Dir: dir, SigningKey: testSigningKey, BaseURL: server.URL})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	handler = s.Handler()
	require.NotNil(t, handler)
	return s, dir
}

func TestDirStoreContract(t *testing.T) {
	s, dir := openDirStore(t)
	runContract(t, s, func(t *testing.T, key string, at time.Time) {
		require.NoError(t, os.Chtimes(filepath.Join(dir, filepath.FromSlash(key)), at, at))
	})
}

func TestOpenRefusesIncompleteConfig(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"nothing":          {Config{}, "set Dir or URL"},
		"both":             {Config{Dir: dir, URL: "s3://bucket", SigningKey: testSigningKey, BaseURL: "http://127.0.0.1:8080"}, "not both"},
		"no signing key":   {Config{Dir: dir, BaseURL: "http://127.0.0.1:8080"}, "SigningKey of at least 16 bytes"},
		"short key":        {Config{Dir: dir, SigningKey: []byte("short"), BaseURL: "http://127.0.0.1:8080"}, "SigningKey of at least 16 bytes"},
		"no base URL":      {Config{Dir: dir, SigningKey: testSigningKey}, "absolute http(s) BaseURL"},
		"relative base":    {Config{Dir: dir, SigningKey: testSigningKey, BaseURL: "/gateway"}, "absolute http(s) BaseURL"},
		"not an s3 URL":    {Config{URL: "file:///tmp/blobs"}, "must look like s3://bucket"},
		"s3 URL no bucket": {Config{URL: "s3:///?region=us-east-1"}, "must look like s3://bucket"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Open(ctx, tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestOpenCreatesTheDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	s, err := Open(context.Background(), Config{Dir: dir, SigningKey: testSigningKey, BaseURL: "http://127.0.0.1:8080"})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	require.DirExists(t, dir)
	putText(t, s, "results/job/a.txt", "a")
	require.FileExists(t, filepath.Join(dir, "results", "job", "a.txt"))
}

func TestDevLinks(t *testing.T) {
	ctx := context.Background()
	s, _ := openDirStore(t)
	const transcript = "WEBVTT\n\n00:00.000 --> 00:01.000\nhello world\n"
	putText(t, s, "results/job-1/transcript.vtt", transcript)
	putText(t, s, "results/job-2/transcript.vtt", "someone else's transcript")

	link, err := s.SignedURL(ctx, "results/job-1/transcript.vtt", time.Hour)
	require.NoError(t, err)

	t.Run("the link names the file under FilesPath", func(t *testing.T) {
		u, err := url.Parse(link)
		require.NoError(t, err)
		require.Equal(t, FilesPath+"results/job-1/transcript.vtt", u.Path)
		require.NotContains(t, u.Query(), "obj")
	})

	t.Run("GET", func(t *testing.T) {
		resp := get(t, http.MethodGet, link, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "text/plain", resp.Header.Get("Content-Type"))
		require.Equal(t, strconv.Itoa(len(transcript)), resp.Header.Get("Content-Length"))
		require.Equal(t, "private, no-store", resp.Header.Get("Cache-Control"))
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
		require.Equal(t, transcript, readBody(t, resp))
	})

	t.Run("HEAD", func(t *testing.T) {
		resp := get(t, http.MethodHead, link, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, strconv.Itoa(len(transcript)), resp.Header.Get("Content-Length"))
		require.Empty(t, readBody(t, resp))
	})

	t.Run("Range", func(t *testing.T) {
		resp := get(t, http.MethodGet, link, http.Header{"Range": {"bytes=8-12"}})
		require.Equal(t, http.StatusPartialContent, resp.StatusCode)
		require.Equal(t, "bytes 8-12/"+strconv.Itoa(len(transcript)), resp.Header.Get("Content-Range"))
		require.Equal(t, transcript[8:13], readBody(t, resp))
	})

	t.Run("other methods", func(t *testing.T) {
		resp := get(t, http.MethodDelete, link, nil)
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
		requireEnvelope(t, resp, "METHOD_NOT_ALLOWED", "GET and HEAD")
		require.Equal(t, transcript, readObject(t, s, "results/job-1/transcript.vtt"))
	})

	t.Run("expired", func(t *testing.T) {
		expired, err := s.links.URLFromKey(ctx, "results/job-1/transcript.vtt", &driver.SignedURLOptions{Method: http.MethodGet, Expiry: -time.Minute})
		require.NoError(t, err)
		resp := get(t, http.MethodGet, expired.String(), nil)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		requireEnvelope(t, resp, "FORBIDDEN", "the download link has expired")
	})

	t.Run("tampered", func(t *testing.T) {
		signature := query(t, link).Get("signature")
		flipped := []byte(signature)
		flipped[len(flipped)/2] ^= 1
		expiry, err := strconv.ParseInt(query(t, link).Get("expiry"), 10, 64)
		require.NoError(t, err)
		for name, tampered := range map[string]string{
			"signature":         withQuery(t, link, "signature", string(flipped)),
			"no signature":      withQuery(t, link, "signature", ""),
			"key":               strings.Replace(link, "/job-1/", "/job-2/", 1),
			"later expiry":      withQuery(t, link, "expiry", strconv.FormatInt(expiry+3600, 10)),
			"garbled expiry":    withQuery(t, link, "expiry", "soon"),
			"method":            withQuery(t, link, "method", http.MethodPut),
			"outside FilesPath": strings.Replace(link, FilesPath, "/other/", 1),
		} {
			t.Run(name, func(t *testing.T) {
				resp := get(t, http.MethodGet, tampered, nil)
				require.Equal(t, http.StatusForbidden, resp.StatusCode)
				body := requireEnvelope(t, resp, "FORBIDDEN", "the download link is invalid")
				require.NotContains(t, body, signature)
				require.NotContains(t, body, string(flipped))
			})
		}
	})

	t.Run("an added obj parameter is ignored", func(t *testing.T) {
		// The signer reads the key from its obj parameter; the handler sets
		// it from the path, so a smuggled one cannot pick another object.
		resp := get(t, http.MethodGet, withQuery(t, link, "obj", "results/job-2/transcript.vtt"), nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, transcript, readBody(t, resp))
	})

	t.Run("a deleted object", func(t *testing.T) {
		gone, err := s.SignedURL(ctx, "results/job-2/transcript.vtt", time.Hour)
		require.NoError(t, err)
		require.NoError(t, s.Delete(ctx, "results/job-2/transcript.vtt"))
		resp := get(t, http.MethodGet, gone, nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		requireEnvelope(t, resp, "NOT_FOUND", "no longer exists")
	})

	t.Run("a key needing escapes", func(t *testing.T) {
		const key = "results/job-3/my file #1?.txt"
		putText(t, s, key, "escaped")
		escaped, err := s.SignedURL(ctx, key, time.Hour)
		require.NoError(t, err)
		resp := get(t, http.MethodGet, escaped, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "escaped", readBody(t, resp))
	})
}

func TestDevLinksNeedTheSameSigningKey(t *testing.T) {
	s, _ := openDirStore(t)
	putText(t, s, "results/job-1/a.txt", "a")
	other, err := Open(context.Background(), Config{Dir: t.TempDir(), SigningKey: []byte("another key, just as long......."), BaseURL: "http://127.0.0.1:8080"})
	require.NoError(t, err)
	defer func() { require.NoError(t, other.Close()) }()
	foreign, err := other.SignedURL(context.Background(), "results/job-1/a.txt", time.Hour)
	require.NoError(t, err)

	good, err := s.SignedURL(context.Background(), "results/job-1/a.txt", time.Hour)
	require.NoError(t, err)
	base, err := url.Parse(good)
	require.NoError(t, err)
	u, err := url.Parse(foreign)
	require.NoError(t, err)
	u.Scheme, u.Host = base.Scheme, base.Host

	resp := get(t, http.MethodGet, u.String(), nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	requireEnvelope(t, resp, "FORBIDDEN", "invalid")
}

func get(t *testing.T, method, link string, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, link, nil)
	require.NoError(t, err)
	for name, values := range header {
		req.Header[name] = values
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// requireEnvelope checks the API's error envelope and returns the body.
func requireEnvelope(t *testing.T, resp *http.Response, code, messagePart string) string {
	t.Helper()
	require.Equal(t, "application/json; charset=utf-8", resp.Header.Get("Content-Type"))
	body := readBody(t, resp)
	var envelope struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &envelope), body)
	require.Equal(t, code, envelope.Error.Code)
	require.Contains(t, envelope.Error.Message, messagePart)
	return body
}

func query(t *testing.T, link string) url.Values {
	t.Helper()
	u, err := url.Parse(link)
	require.NoError(t, err)
	return u.Query()
}

func withQuery(t *testing.T, link, name, value string) string {
	t.Helper()
	u, err := url.Parse(link)
	require.NoError(t, err)
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// TestDevLinksCapTheRanges: many small ranges would make a multipart
// answer many times the file's size; a link serves one range at most and
// answers a request for more with the whole file (docs/media.md).
func TestDevLinksCapTheRanges(t *testing.T) {
	t.Parallel()
	s, _ := openDirStore(t)
	file := strings.Repeat("0123456789", 200) // 2,000 bytes
	putText(t, s, "results/job-1/transcript.srt", file)
	link, err := s.SignedURL(context.Background(), "results/job-1/transcript.srt", time.Hour)
	require.NoError(t, err)

	t.Run("1,000 one-byte ranges get the file, not 1,000 parts", func(t *testing.T) {
		t.Parallel()
		specs := make([]string, 1000)
		for i := range specs {
			specs[i] = strconv.Itoa(i) + "-" + strconv.Itoa(i)
		}
		resp := get(t, http.MethodGet, link, http.Header{"Range": {"bytes=" + strings.Join(specs, ",")}})
		body := readBody(t, resp)
		require.LessOrEqual(t, len(body), len(file)+512, "the answer is about the file's size")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Empty(t, resp.Header.Get("Content-Range"))
		require.Equal(t, file, body)
	})

	t.Run("two ranges get the file", func(t *testing.T) {
		t.Parallel()
		resp := get(t, http.MethodGet, link, http.Header{"Range": {"bytes=0-0,5-5"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, file, readBody(t, resp))
	})

	t.Run("two Range fields get the file", func(t *testing.T) {
		t.Parallel()
		resp := get(t, http.MethodGet, link, http.Header{"Range": {"bytes=0-0", "bytes=5-5"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, file, readBody(t, resp))
	})

	t.Run("one range, empty list elements aside, is served", func(t *testing.T) {
		t.Parallel()
		resp := get(t, http.MethodGet, link, http.Header{"Range": {"bytes=, 10-19 ,"}})
		require.Equal(t, http.StatusPartialContent, resp.StatusCode)
		require.Equal(t, "bytes 10-19/2000", resp.Header.Get("Content-Range"))
		require.Equal(t, file[10:20], readBody(t, resp))
	})
}
