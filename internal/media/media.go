// Package media fetches, probes and decodes a job's media, and classifies
// what fails (Error); it knows the job model, never the adapters above it.
package media

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/netguard"
)

// UnreadableCode is the input error code of media of a service that cannot
// be read.
func UnreadableCode(s jobs.ServiceID) string {
	if svc, ok := jobs.ServiceOf(s); ok && svc.Media.UnreadableCode != "" {
		return svc.Media.UnreadableCode
	}
	return jobs.CodeInputUnreadable
}

// ParseURL checks that rawURL is an absolute http or https URL.
func ParseURL(s jobs.ServiceID, rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, inputError(UnreadableCode(s), "input.url must be an absolute http or https URL", err)
	}
	return u, nil
}

// StatusError classifies the media host's answer: nil for 2xx,
// MEDIA_UNAVAILABLE otherwise, an input error (the job fails at once) for
// 4xx other than 408 and 429, retryable for the rest. Nothing was read, so
// it is never AUDIO_UNREADABLE (docs/media.md, Errors of the stage). The
// message names the host only, as URLs may carry signed credentials.
func StatusError(u *url.URL, status int) error {
	if status >= 200 && status < 300 {
		return nil
	}
	msg := fmt.Sprintf("media host %s answered %d %s for input.url", u.Host, status, http.StatusText(status))
	if status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests {
		e := inputError(jobs.CodeMediaUnavailable, msg+"; check that the URL is reachable by the gateway", nil)
		e.StatusCode = status
		return e
	}
	e := retryable(jobs.CodeMediaUnavailable, msg, nil)
	e.StatusCode = status
	return e
}

// TransportError classifies a request that got no answer: ctx.Err() when
// ctx ended, an input error MEDIA_ADDRESS_FORBIDDEN saying why when the
// guard refused it (an address, a port, a redirect to a file: URL), a
// retryable error otherwise.
func TransportError(ctx context.Context, u *url.URL, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	// Refused by policy, not by the network: retrying cannot help.
	var redirect *netguard.RedirectError
	if errors.As(err, &redirect) {
		return inputError(jobs.CodeMediaAddressForbidden,
			fmt.Sprintf("media host %s redirected to a %s: URL; only http and https are fetched", redirect.From, redirect.Scheme), err)
	}
	if why := netguard.Refusal(err); why != "" {
		msg := fmt.Sprintf("media host %s is refused: %s", u.Host, why)
		if to := requestHost(err); to != "" && to != u.Host {
			msg = fmt.Sprintf("media host %s redirected to %s, which is refused: %s", u.Host, to, why)
		}
		return inputError(jobs.CodeMediaAddressForbidden, msg, err)
	}
	return retryable(jobs.CodeMediaUnavailable, fmt.Sprintf("could not reach media host %s", u.Host), err)
}

// requestHost is the host of the request a client's error is about, after
// redirects; "" when unknown. Only the host: URLs may carry credentials.
func requestHost(err error) string {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return ""
	}
	if r, perr := url.Parse(ue.URL); perr == nil {
		return r.Host
	}
	return ""
}

// Head asks the media host about input.url and returns its Content-Length,
// or -1 when unknown. Hosts that do not allow HEAD (405, 501) are trusted.
func Head(ctx context.Context, client *http.Client, s jobs.ServiceID, rawURL string) (int64, error) {
	u, err := ParseURL(s, rawURL)
	if err != nil {
		return -1, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u.String(), nil)
	if err != nil {
		return -1, inputError(UnreadableCode(s), "input.url is not a valid request URL", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return -1, TransportError(ctx, u, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented {
		return -1, nil
	}
	if err := StatusError(u, resp.StatusCode); err != nil {
		return -1, err
	}
	return resp.ContentLength, nil
}
