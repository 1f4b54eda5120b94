package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/ai-job-gateway/gateway/providers"
)

// Fetched describes a fetched media file.
type Fetched struct {
	Size        int64
	ContentType string
}

// errTooLarge marks a body that grew past the cap while streaming.
var errTooLarge = errors.New("over the size cap")

// Fetch streams rawURL into a new file at dst through client (the
// address-guarded client of the caller), refusing more than maxBytes (0:
// no cap). A Content-Length over the cap is refused before reading; a body
// that grows past it is cut off while streaming, never held in memory. On
// failure the partial file is removed. Errors are *providers.Error
// (FILE_TOO_LARGE, or as StatusError and TransportError classify them), or
// ctx.Err() when ctx ends.
func Fetch(ctx context.Context, client *http.Client, s providers.ServiceID, rawURL, dst string, maxBytes int64) (Fetched, error) {
	u, err := ParseURL(s, rawURL)
	if err != nil {
		return Fetched{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Fetched{}, providers.InputError(UnreadableCode(s), "input.url is not a valid request URL", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return Fetched{}, TransportError(ctx, u, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if err := StatusError(u, resp.StatusCode); err != nil {
		return Fetched{}, err
	}
	tooLarge := providers.InputError(providers.CodeFileTooLarge,
		fmt.Sprintf("input.url is larger than the %d MB any provider of %s accepts", maxBytes>>20, s), nil)
	if maxBytes > 0 && resp.ContentLength > maxBytes {
		return Fetched{}, tooLarge
	}

	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Fetched{}, fmt.Errorf("media: create %s: %w", dst, err)
	}
	body := io.Reader(resp.Body)
	if maxBytes > 0 {
		body = &cappedReader{r: resp.Body, left: maxBytes}
	}
	n, copyErr := io.Copy(f, body)
	closeErr := f.Close()
	switch {
	case errors.Is(copyErr, errTooLarge):
		err = tooLarge
	case copyErr != nil:
		err = TransportError(ctx, u, copyErr)
	case closeErr != nil:
		err = fmt.Errorf("media: write %s: %w", dst, closeErr)
	}
	if err != nil {
		_ = os.Remove(dst)
		return Fetched{}, err
	}
	return Fetched{Size: n, ContentType: resp.Header.Get("Content-Type")}, nil
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
