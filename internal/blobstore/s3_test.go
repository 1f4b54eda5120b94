package blobstore

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/require"
)

// shiftedClock is the fake S3 backend's clock: real time moved by an offset,
// so a test can write an object "in the past".
type shiftedClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *shiftedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset).UTC()
}

func (c *shiftedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *shiftedClock) set(offset time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = offset
}

// fakeS3 is what a test sees of the S3 server: its clock and how many
// multipart part uploads it received.
type fakeS3 struct {
	clock       *shiftedClock
	partUploads atomic.Int64
}

// openS3Store starts an in-memory S3 server (gofakes3) on this machine and
// opens a URL store on a fresh bucket in it, path style, with credentials
// from the environment like serve and worker.
func openS3Store(t *testing.T) (*Store, *fakeS3) {
	t.Helper()
	fake := &fakeS3{clock: &shiftedClock{}}
	backend := s3mem.New(s3mem.WithTimeSource(fake.clock))
	s3Handler := gofakes3.New(backend).Server()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Query().Has("partNumber") {
			fake.partUploads.Add(1)
		}
		s3Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	require.NoError(t, backend.CreateBucket("results"))

	t.Setenv("AWS_ACCESS_KEY_ID", "test-access-key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret-key")
	t.Setenv("AWS_REGION", "us-east-1")
	bucketURL := "s3://results?" + url.Values{
		"endpoint":       {server.URL},
		"region":         {"us-east-1"},
		"use_path_style": {"true"},
		// gofakes3 sends no response checksums; do not warn about each GET.
		"response_checksum_validation": {"when_required"},
	}.Encode()
	s, err := Open(context.Background(), Config{URL: bucketURL})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	require.Nil(t, s.Handler(), "S3 serves a URL store's links")
	return s, fake
}

func TestS3StoreContract(t *testing.T) {
	s, fake := openS3Store(t)
	runContract(t, s, func(t *testing.T, key string, at time.Time) {
		// S3 sets LastModified itself: write the object again while the
		// server's clock says at.
		body := readObject(t, s, key)
		fake.clock.set(time.Until(at))
		defer fake.clock.set(0)
		putText(t, s, key, body)
	})
}

func TestS3OpenRefusesAMissingBucket(t *testing.T) {
	server := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	defer server.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "test-access-key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret-key")
	_, err := Open(context.Background(), Config{URL: "s3://absent?use_path_style=true&region=us-east-1&endpoint=" + url.QueryEscape(server.URL)})
	require.ErrorContains(t, err, `bucket "absent": the bucket does not exist`)
}

func TestS3SignedURL(t *testing.T) {
	s, _ := openS3Store(t)
	putText(t, s, "results/job-1/translation.txt", "bonjour le monde")
	link, err := s.SignedURL(context.Background(), "results/job-1/translation.txt", 10*time.Minute)
	require.NoError(t, err)
	u, err := url.Parse(link)
	require.NoError(t, err)
	require.Equal(t, "/results/results/job-1/translation.txt", u.Path, "path style: bucket then key")
	require.NotEmpty(t, u.Query().Get("X-Amz-Signature"))
	require.Equal(t, "600", u.Query().Get("X-Amz-Expires"))

	// A plain client, no credentials: the link is all it needs.
	resp, err := http.Get(link)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "bonjour le monde", string(body))
}

func TestS3StreamedPutOfManyParts(t *testing.T) {
	s, fake := openS3Store(t)
	ctx := context.Background()
	const size = 32<<20 + 12345 // several 5 MiB parts and a short last one
	n, err := s.Put(ctx, "media/job-1/audio.wav", "audio/wav", &generated{size: size})
	require.NoError(t, err)
	require.EqualValues(t, size, n)
	require.GreaterOrEqual(t, fake.partUploads.Load(), int64(2), "uploaded in parts, not in one request")

	r, err := s.Open(ctx, "media/job-1/audio.wav")
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	requireGenerated(t, r, size)
}

// With public_endpoint, links are signed for the host clients reach the
// bucket at (a compose network's published port), and work there.
func TestS3SignedURLForAPublicEndpoint(t *testing.T) {
	inner, _ := openS3Store(t)
	putText(t, inner, "results/job-1/out.txt", "hola")
	// The public endpoint: another address of the same bucket, as a
	// published port is.
	innerLink, err := inner.SignedURL(context.Background(), "results/job-1/out.txt", time.Minute)
	require.NoError(t, err)
	innerURL, err := url.Parse(innerLink)
	require.NoError(t, err)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.Scheme, r.URL.Host = "http", innerURL.Host
		r.Host = r.URL.Host
		resp, err := http.DefaultTransport.RoundTrip(r.Clone(r.Context()))
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	defer proxy.Close()

	s, err := Open(context.Background(), Config{URL: "s3://results?" + url.Values{
		"endpoint": {"http://" + innerURL.Host}, "region": {"us-east-1"}, "use_path_style": {"true"},
		"response_checksum_validation": {"when_required"}, "public_endpoint": {proxy.URL},
	}.Encode()})
	require.NoError(t, err)
	defer s.Close()
	link, err := s.SignedURL(context.Background(), "results/job-1/out.txt", time.Minute)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(link, proxy.URL+"/results/results/job-1/out.txt?"), link)

	// Served through the public host (gofakes3 checks no signature, so
	// this shows where the link leads, not that S3 would refuse it
	// elsewhere: the host is part of what SigV4 signs).
	resp, err := http.Get(link)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "hola", string(body))
	require.Contains(t, link, "X-Amz-SignedHeaders=host")

	_, err = Open(context.Background(), Config{URL: "s3://results?endpoint=http://" + innerURL.Host + "&public_endpoint=s3:8333"})
	require.ErrorContains(t, err, "public_endpoint must be an absolute http(s) URL")
}
