package providers

import (
	"errors"

	"github.com/ai-job-gateway/gateway/internal/media"
)

// MediaError classifies a failure of internal/media as a call failure: a
// retryable error or the job's input error, with the media's code. Other
// errors (a context's end) are returned as they are.
func MediaError(err error) error {
	var m *media.Error
	if !errors.As(err, &m) {
		return err
	}
	kind := KindInput
	if m.Retryable {
		kind = KindRetryable
	}
	return &Error{Kind: kind, Code: m.Code, Message: m.Message, StatusCode: m.StatusCode, Err: m.Err}
}
