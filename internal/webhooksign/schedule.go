package webhooksign

import (
	"fmt"
	"hash/fnv"
	"time"
)

// The one retry schedule of every webhook event: a job's events (its
// workflow's timers), budget.threshold and batch.completed events (the
// housekeeping sweeps' due times). docs/webhooks.md, Delivery, ordering
// and retries.
const (
	// RetryWindow is how long an event is retried after it happened,
	// unless the deployment sets a shorter one (Window).
	RetryWindow = 24 * time.Hour
	// MaxBackoff caps the wait between two attempts.
	MaxBackoff = time.Hour
)

// Window is the retry window giveUpAfter asks for, or RetryWindow.
func Window(giveUpAfter time.Duration) time.Duration {
	if giveUpAfter > 0 {
		return giveUpAfter
	}
	return RetryWindow
}

// Backoff is the wait after failed attempt number attempt (from 1) of
// message messageID: 1 s doubling per attempt up to MaxBackoff, with ±20 %
// jitter. The jitter is derived from the message id and attempt, so it is
// the same on a workflow's replay and still spreads the retries of
// different messages.
func Backoff(attempt int, messageID string) time.Duration {
	base := time.Second << min(attempt-1, 12)
	base = min(base, MaxBackoff)
	h := fnv.New64a()
	_, _ = fmt.Fprintf(h, "%s/%d", messageID, attempt)
	jitter := float64(h.Sum64()%4001)/10000 - 0.2 // -0.2 .. +0.2
	return time.Duration(float64(base) * (1 + jitter))
}

// RetryAfter is how long to wait, after attempt number attempt of
// messageID failed at now, before the next; retry is false when the next
// attempt would come after giveUpAt, and the message is given up.
func RetryAfter(messageID string, attempt int, now, giveUpAt time.Time) (wait time.Duration, retry bool) {
	wait = Backoff(attempt, messageID)
	return wait, !now.Add(wait).After(giveUpAt)
}
