package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// Fetched describes a fetched media file.
type Fetched struct {
	Size        int64
	ContentType string
}

// errTooLarge marks a body that grew past the cap while streaming.
var errTooLarge = errors.New("over the size cap")

// Limits bounds one fetch (docs/media.md, Slow media hosts).
type Limits struct {
	// MaxBytes refuses media larger than this; 0: no cap.
	MaxBytes int64
	// MinBytes per RateWindow is the slowest transfer accepted: from the
	// host's answer on, a fetch that receives fewer than MinBytes in any
	// RateWindow fails, retryably. MinBytes 0: no floor.
	MinBytes   int64
	RateWindow time.Duration
	// Timeout bounds the whole fetch, retryably; 0: none.
	Timeout time.Duration
}

// Fetch streams rawURL into a new file at dst through client (the
// address-guarded client of the caller), within lim. A Content-Length over
// lim.MaxBytes is refused before reading; a body that grows past it is cut
// off while streaming, never held in memory. On failure the partial file
// is removed. Errors are *Error (FILE_TOO_LARGE; MEDIA_UNAVAILABLE
// for a transfer too slow or too long; or as StatusError and TransportError
// classify them), or ctx.Err() when ctx ends.
func Fetch(ctx context.Context, client *http.Client, s jobs.ServiceID, rawURL, dst string, lim Limits) (Fetched, error) {
	u, err := ParseURL(s, rawURL)
	if err != nil {
		return Fetched{}, err
	}
	// The limits cancel fetchCtx with their classified error as its cause.
	fetchCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if lim.Timeout > 0 {
		var stop context.CancelFunc
		fetchCtx, stop = context.WithTimeoutCause(fetchCtx, lim.Timeout, retryable(jobs.CodeMediaUnavailable,
			fmt.Sprintf("media host %s did not send the whole media within the fetch timeout of %s", u.Host, lim.Timeout), nil))
		defer stop()
	}
	failed := func(err error) error {
		var limit *Error
		if ctx.Err() == nil && errors.As(context.Cause(fetchCtx), &limit) {
			return limit
		}
		return TransportError(ctx, u, err)
	}
	req, err := http.NewRequestWithContext(fetchCtx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Fetched{}, inputError(UnreadableCode(s), "input.url is not a valid request URL", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return Fetched{}, failed(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if err := StatusError(u, resp.StatusCode); err != nil {
		return Fetched{}, err
	}
	maxBytes := lim.MaxBytes
	tooLarge := inputError(jobs.CodeFileTooLarge,
		fmt.Sprintf("input.url is larger than the %d MB any provider of %s accepts", maxBytes>>20, s), nil)
	if maxBytes > 0 && resp.ContentLength > maxBytes {
		return Fetched{}, tooLarge
	}

	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Fetched{}, fmt.Errorf("media: create %s: %w", dst, err)
	}
	received := new(atomic.Int64)
	body := io.Reader(&countingReader{r: resp.Body, n: received})
	if maxBytes > 0 {
		body = &cappedReader{r: body, left: maxBytes}
	}
	if lim.MinBytes > 0 && lim.RateWindow > 0 {
		go watchRate(fetchCtx, cancel, received, lim, u.Host)
	}
	n, copyErr := io.Copy(f, body)
	closeErr := f.Close()
	switch {
	case errors.Is(copyErr, errTooLarge):
		err = tooLarge
	case copyErr != nil:
		err = failed(copyErr)
	case closeErr != nil:
		err = fmt.Errorf("media: write %s: %w", dst, closeErr)
	}
	if err != nil {
		_ = os.Remove(dst)
		return Fetched{}, err
	}
	return Fetched{Size: n, ContentType: resp.Header.Get("Content-Type")}, nil
}

// rateSteps is how many samples of the bytes received watchRate keeps per
// window: the window slides in steps of a tenth.
const rateSteps = 10

// watchRate cancels the fetch, with its error as the cause, when fewer than
// lim.MinBytes arrived over the last lim.RateWindow, until ctx ends.
func watchRate(ctx context.Context, cancel context.CancelCauseFunc, received *atomic.Int64, lim Limits, host string) {
	ticker := time.NewTicker(max(lim.RateWindow/rateSteps, time.Millisecond))
	defer ticker.Stop()
	var samples [rateSteps + 1]int64 // samples[i%len]: received after i steps
	for i := 1; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		now := received.Load()
		samples[i%len(samples)] = now
		if i < rateSteps {
			continue
		}
		if got := now - samples[(i-rateSteps)%len(samples)]; got < lim.MinBytes {
			cancel(retryable(jobs.CodeMediaUnavailable, fmt.Sprintf(
				"media host %s sent %s in the last %s, below the minimum rate of %s per %s",
				host, byteSize(got), lim.RateWindow, byteSize(lim.MinBytes), lim.RateWindow), nil))
			return
		}
	}
}

// byteSize writes n as KiB or MiB when it is a whole number of them.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n == 1:
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// countingReader counts the bytes read from r into n.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// cappedReader reads at most left bytes, and fails with errTooLarge when
// there is more.
type cappedReader struct {
	r    io.Reader
	left int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n + int(c.left), errTooLarge
	}
	return n, err
}
