package api

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/internal/vendorcallback"
)

// CallbackReceiver takes what vendors post back about jobs
// (*jobops.Service is one).
type CallbackReceiver interface {
	// CheckProviderCallback refuses a post by its address alone: no
	// callbacks taken, or a token that is not the attempt's.
	CheckProviderCallback(jobID string, attempt int, token string) error
	ReceiveProviderCallback(ctx context.Context, jobID string, attempt int, token string, body []byte) error
}

// Vendor callbacks carry whole transcripts, so their route has a body limit
// of its own, and few are read at once (docs/providers.md, Vendor
// callbacks).
const (
	// CallbackMaxBodyBytes is the largest callback body accepted.
	CallbackMaxBodyBytes = 32 << 20
	// CallbackConcurrency is how many callback bodies are read at once;
	// a post beyond it answers 429 with Retry-After.
	CallbackConcurrency = 4
	// callbackRetryAfter is that 429's Retry-After, in seconds.
	callbackRetryAfter = 2
	// callbackReadTimeout is how long a callback's body may take to
	// arrive: 32 MiB at 2.3 Mbit/s, as other routes' 8 MiB in 30 s.
	callbackReadTimeout = 2 * time.Minute
)

// callbacksHandler takes vendors' callbacks (docs/providers.md, Vendor
// callbacks).
type callbacksHandler struct {
	// receiver nil answers the route 404.
	receiver CallbackReceiver
	// slots holds one token per callback being read.
	slots chan struct{}
}

func newCallbacksHandler(receiver CallbackReceiver) callbacksHandler {
	return callbacksHandler{receiver: receiver, slots: make(chan struct{}, CallbackConcurrency)}
}

// routes registers POST /v1/provider-callbacks/{job_id}/{attempt}: vendors
// carry no token of ours, so the route is outside /v1's authentication and
// its own token is in the query.
func (h callbacksHandler) routes(r gin.IRouter) {
	r.POST(vendorcallback.Path, handle(h.receive))
}

// receive handles POST /v1/provider-callbacks/{job_id}/{attempt}?token=.
// The address is checked before a byte of the body is read, so a forged
// post is refused at once and costs no memory.
func (h callbacksHandler) receive(c *gin.Context) error {
	jobID := c.Param("job_id")
	attempt, err := strconv.Atoi(c.Param("attempt"))
	if h.receiver == nil || err != nil {
		return apierror.NotFound("no callback address %s", c.Request.URL.Path)
	}
	token := c.Query("token")
	if err := h.receiver.CheckProviderCallback(jobID, attempt, token); err != nil {
		return jobopsError(err)
	}
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		return apierror.New(http.StatusTooManyRequests, apierror.CodeRateLimited,
			"%d vendor callbacks are being read; post this one again after Retry-After seconds", CallbackConcurrency).
			WithHeader("Retry-After", strconv.Itoa(callbackRetryAfter))
	}
	// A long transcript over a slow link needs more than the server's
	// read timeout, which is sized for 8 MiB: this post's token is good.
	_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now().Add(callbackReadTimeout))
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return err
	}
	if len(body) == 0 {
		return apierror.New(http.StatusBadRequest, apierror.CodeValidation, "the callback has no body")
	}
	if err := h.receiver.ReceiveProviderCallback(c.Request.Context(), jobID, attempt, token, body); err != nil {
		return jobopsError(err)
	}
	c.Status(http.StatusNoContent)
	return nil
}
