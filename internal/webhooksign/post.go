package webhooksign

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ai-job-gateway/gateway/internal/netguard"
)

// Limits and identity of every webhook post (docs/webhooks.md).
const (
	// Timeout bounds a whole exchange: connect, send, answer.
	Timeout = 10 * time.Second
	// UserAgent identifies the gateway to receivers.
	UserAgent = "ai-job-gateway-webhooks/1"
	// maxAnswer is how much of an answer's body is read (and discarded)
	// so the connection can be reused.
	maxAnswer = 64 << 10
)

// defaultClient posts when the caller passes none: public addresses only.
var defaultClient = netguard.NewClient(false, Timeout)

// Outcome is how a post ended.
type Outcome string

// Outcomes of a post.
const (
	Delivered Outcome = "delivered" // a 2xx answer
	Gone      Outcome = "gone"      // 410 Gone: the receiver wants no more
	Refused   Outcome = "refused"   // the network guard refused the address
	Failed    Outcome = "failed"    // another answer, a timeout or a network error: retry
)

// Message is one signed webhook request.
type Message struct {
	// URL receives the POST.
	URL string
	// ID is the webhook-id, the same on every attempt.
	ID string
	// Headers are the receiver's own, set before the gateway's.
	Headers map[string]string
	// Body is the JSON payload.
	Body []byte
}

// Answer is what one post got.
type Answer struct {
	Outcome Outcome
	// Status is the receiver's status code; 0 when none came.
	Status int
	// Err says why the post did not deliver, naming no URL (URLs may carry
	// the client's secrets); nil when delivered. errors.Is(Err,
	// netguard.ErrForbiddenAddress) when refused.
	Err error
}

// LogError is the answer as delivery logs record it (docs/webhooks.md,
// Delivery log): "" when delivered, "refused: …" for a refused address,
// else why it failed.
func (a Answer) LogError() string {
	switch {
	case a.Outcome == Delivered:
		return ""
	case a.Outcome == Refused:
		return "refused: " + a.Err.Error() + "; webhooks go to public addresses only"
	case a.Err == nil:
		return string(a.Outcome)
	}
	return a.Err.Error()
}

// Post sends m to its URL once, signed by signer as of now, with client
// (the netguard-ed client of its caller; nil: public addresses only) and
// at most Timeout (less when the client's own timeout is shorter).
func Post(ctx context.Context, client *http.Client, signer *Signer, m Message, now time.Time) Answer {
	if client == nil {
		client = defaultClient
	}
	limit := Timeout
	if client.Timeout > 0 && client.Timeout < limit {
		limit = client.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.URL, bytes.NewReader(m.Body))
	if err != nil {
		return Answer{Outcome: Failed, Err: errors.New("the webhook URL is not a valid URL")}
	}
	for name, value := range m.Headers {
		req.Header.Set(name, value)
	}
	// Set after the receiver's headers: these are the gateway's.
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("webhook-id", m.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", signer.Sign(m.ID, now, m.Body))

	resp, err := client.Do(req)
	if err != nil {
		err = describe(ctx, err, limit)
		if errors.Is(err, netguard.ErrForbiddenAddress) {
			return Answer{Outcome: Refused, Err: err}
		}
		return Answer{Outcome: Failed, Err: err}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	switch status := resp.StatusCode; {
	case status >= 200 && status < 300:
		return Answer{Outcome: Delivered, Status: status}
	case status == http.StatusGone:
		return Answer{Outcome: Gone, Status: status, Err: errors.New("receiver answered 410 Gone")}
	default:
		return Answer{Outcome: Failed, Status: status, Err: fmt.Errorf("receiver answered %d %s", status, http.StatusText(status))}
	}
}

// describe turns a client error into one that names no URL.
func describe(ctx context.Context, err error, limit time.Duration) error {
	var urlErr *url.Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &urlErr) && urlErr.Timeout()) {
		return fmt.Errorf("no answer within %s", limit)
	}
	if urlErr != nil {
		return urlErr.Err
	}
	return err
}
