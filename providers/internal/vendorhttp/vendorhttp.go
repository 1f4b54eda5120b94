// Package vendorhttp sends an adapter's request to its provider and
// classifies what cannot be the provider's answer (docs/providers.md,
// Adapters): the adapter classifies the answers themselves.
package vendorhttp

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// Answer is a provider's answer that is not a success.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// maxBody caps what is read of an answer.
const maxBody = 64 << 20

// Send performs req. It returns the body of a 2xx answer, or the Answer
// of another. A request that got no answer is a retryable error naming
// the provider, or ctx.Err() when ctx ended.
func Send(ctx context.Context, client *http.Client, providerID string, req *http.Request) ([]byte, *Answer, error) {
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, providers.Retryable(jobs.CodeProviderUnavailable, fmt.Sprintf("provider %q could not be reached", providerID), err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, providers.Retryable(jobs.CodeProviderUnavailable, fmt.Sprintf("provider %q: reading the answer failed", providerID), err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return body, nil, nil
	}
	return nil, &Answer{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// Error classifies an answer the usual way (docs/providers.md, Adapters):
// 429 and 5xx retryable, honouring Retry-After; any other status
// permanent. detail is the vendor's own message, when it gave one.
func (a *Answer) Error(providerID, detail string) *providers.Error {
	msg := fmt.Sprintf("provider %q answered %d", providerID, a.Status)
	if detail != "" {
		msg += ": " + detail
	}
	var e *providers.Error
	if a.Status == http.StatusTooManyRequests || a.Status >= 500 {
		e = providers.Retryable(jobs.CodeProviderUnavailable, msg, nil)
		e.RetryAfter = providers.RetryAfterHeader(a.Header.Get("Retry-After"))
	} else {
		e = providers.Permanent(jobs.CodeProviderRejected, msg, nil)
	}
	e.StatusCode = a.Status
	return e
}
