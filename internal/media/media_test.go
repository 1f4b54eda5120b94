package media_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/internal/netguard"
)

func TestRefusedAddressIsAnInputError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()

	_, err := media.Head(context.Background(), netguard.NewMediaClient(false, 5*time.Second), jobs.Transcriptions, srv.URL+"/a.wav")
	var perr *media.Error
	require.True(t, errors.As(err, &perr), "%v", err)
	require.False(t, perr.Retryable, "an address the gateway may not reach fails the job, no retries")
	require.Equal(t, jobs.CodeMediaAddressForbidden, perr.Code)

	size, err := media.Head(context.Background(), netguard.NewMediaClient(true, 5*time.Second), jobs.Transcriptions, srv.URL+"/a.wav")
	require.NoError(t, err, "allowed with --allow-private-networks")
	require.Equal(t, int64(-1), size, "no Content-Length from this server")
}

func TestUnreachableHostIsRetryable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	url := srv.URL
	srv.Close()
	_, err := media.Head(context.Background(), netguard.NewMediaClient(true, time.Second), jobs.Transcriptions, url+"/a.wav")
	var perr *media.Error
	require.True(t, errors.As(err, &perr))
	require.True(t, perr.Retryable)
}

func TestRefusedMediaIsUnavailableAtOnce(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gone.wav":
			http.NotFound(w, r)
		default:
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	defer srv.Close()
	client := netguard.NewMediaClient(true, 5*time.Second)
	host := strings.TrimPrefix(srv.URL, "http://")

	for _, tc := range []struct {
		path   string
		status int
	}{{"/gone.wav", 404}, {"/signed.wav?X-Amz-Signature=secret", 403}} {
		for _, svc := range []jobs.ServiceID{jobs.Transcriptions, jobs.VideoAnalyses} {
			_, headErr := media.Head(t.Context(), client, svc, srv.URL+tc.path)
			_, fetchErr := media.Fetch(t.Context(), client, svc, srv.URL+tc.path, filepath.Join(t.TempDir(), "source"), media.Limits{})
			for _, err := range []error{headErr, fetchErr} {
				var perr *media.Error
				require.True(t, errors.As(err, &perr), "%v", err)
				require.False(t, perr.Retryable, "no retries: the host refused the media")
				require.Equal(t, jobs.CodeMediaUnavailable, perr.Code, "not unreadable: nothing was read")
				require.Equal(t, tc.status, perr.StatusCode)
				require.Contains(t, perr.Message, "media host "+host+" answered "+strconv.Itoa(tc.status))
				require.NotContains(t, perr.Message, tc.path, "the URL may carry credentials")
				require.NotContains(t, err.Error(), "secret")
			}
		}
	}
}

func TestRefusedRedirectsFailAtOnce(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/passwd.wav":
			w.Header().Set("Location", "file:///etc/passwd")
		case "/ftp.wav":
			w.Header().Set("Location", "ftp://media.test/a.wav")
		}
		w.WriteHeader(http.StatusFound)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	requireRefused := func(t *testing.T, err error, want ...string) {
		t.Helper()
		var perr *media.Error
		require.True(t, errors.As(err, &perr), "%v", err)
		require.False(t, perr.Retryable, "refused by the guard: retrying cannot help (%v)", err)
		require.Equal(t, jobs.CodeMediaAddressForbidden, perr.Code)
		for _, w := range want {
			require.Contains(t, perr.Message, w)
		}
	}

	client := netguard.NewMediaClient(true, 5*time.Second)
	for path, scheme := range map[string]string{"/passwd.wav": "file", "/ftp.wav": "ftp"} {
		want := "media host " + host + " redirected to a " + scheme + ": URL; only http and https are fetched"
		_, err := media.Head(t.Context(), client, jobs.Transcriptions, srv.URL+path)
		requireRefused(t, err, want)
		_, err = media.Fetch(t.Context(), client, jobs.Transcriptions, srv.URL+path, filepath.Join(t.TempDir(), "source"), media.Limits{})
		requireRefused(t, err, want)
	}

	// A public host that redirects to a loopback address: the guard
	// refuses the second connection, and the message says why.
	guarded := netguard.NewMediaClient(false, 5*time.Second)
	next := guarded.Transport
	guarded.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host != "media.test" {
			return next.RoundTrip(r)
		}
		return &http.Response{StatusCode: http.StatusFound, Header: http.Header{"Location": {srv.URL + "/a.wav"}},
			Body: http.NoBody, Request: r}, nil
	})
	_, err := media.Fetch(t.Context(), guarded, jobs.Transcriptions, "https://media.test/a.wav", filepath.Join(t.TempDir(), "source"), media.Limits{})
	requireRefused(t, err, "media host media.test redirected to "+host, "127.0.0.1 is a loopback address")
	_, err = media.Head(t.Context(), guarded, jobs.Transcriptions, srv.URL+"/a.wav")
	requireRefused(t, err, "media host "+host+" is refused: 127.0.0.1 is a loopback address")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestSlowMediaHostsAreCutOff(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk, every, chunks := 1, 10*time.Millisecond, 1<<30
		switch r.URL.Path {
		case "/steady": // fast enough, but endless
			chunk = 512
		case "/slowish": // well above the floor, for about two windows
			chunk, chunks = 200, 40
		}
		w.Header().Set("Content-Type", "audio/wav")
		for range chunks {
			if _, err := w.Write([]byte(strings.Repeat("x", chunk))); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(every):
			}
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	limits := media.Limits{MinBytes: 1024, RateWindow: 200 * time.Millisecond, Timeout: 800 * time.Millisecond}
	fetch := func(path string) (media.Fetched, string, time.Duration, error) {
		// Without the limits the trickle would run until this context ends.
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		dst := filepath.Join(t.TempDir(), "source")
		start := time.Now()
		got, err := media.Fetch(ctx, netguard.NewMediaClient(true, 0), jobs.Transcriptions, srv.URL+path, dst, limits)
		return got, dst, time.Since(start), err
	}
	requireRetryable := func(t *testing.T, err error, want string) {
		t.Helper()
		var perr *media.Error
		require.True(t, errors.As(err, &perr), "%v", err)
		require.True(t, perr.Retryable, "another try may find the host faster")
		require.Equal(t, jobs.CodeMediaUnavailable, perr.Code)
		require.Contains(t, perr.Message, want)
	}

	_, dst, took, err := fetch("/trickle")
	requireRetryable(t, err, "media host "+host+" sent ")
	require.Regexp(t, `sent [0-9]{1,2} bytes in the last 200ms, below the minimum rate of 1 KiB per 200ms`, err.Error())
	require.Less(t, took, 600*time.Millisecond, "cut off after about one window")
	require.NoFileExists(t, dst, "the partial file is removed")

	_, dst, took, err = fetch("/steady")
	requireRetryable(t, err, "media host "+host+" did not send the whole media within the fetch timeout of 800ms")
	require.GreaterOrEqual(t, took, 800*time.Millisecond)
	require.Less(t, took, 1500*time.Millisecond)
	require.NoFileExists(t, dst)

	got, _, _, err := fetch("/slowish")
	require.NoError(t, err, "a transfer above the floor may take longer than a window")
	require.Equal(t, int64(8000), got.Size)
}
