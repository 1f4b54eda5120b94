package webhooksign

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Attempt is one attempt at a message that a housekeeping sweep sends
// until it is delivered or given up (budget.threshold and batch.completed
// events; a job's events are retried by its workflow): what the delivery
// log records of it, and when it is tried next.
type Attempt struct {
	MessageID string
	// Number counts the message's attempts from 1.
	Number int
	At     time.Time
	// Duration is how long the post took; 0 when nothing was sent.
	Duration time.Duration
	// Sent is whether a request went out; an attempt that could not send
	// is logged too, its error starting "not sent:".
	Sent bool
	Answer
	// Next is when the message is tried again, on the retry schedule;
	// zero once it is delivered or given up.
	Next time.Time
}

// GivenUp says that the message was not delivered and is not tried
// again.
func (a Attempt) GivenUp() bool {
	return a.Outcome != Delivered && a.Next.IsZero()
}

// Send posts m (Post) as attempt number of its message, signed as of
// now. A failure other than 410 Gone or a refused address is tried again
// after RetryAfter, unless that is after giveUpAt. Without a signer
// nothing is sent, and the message waits as after a failure, so that a
// deployment given its key delivers it.
func Send(ctx context.Context, client *http.Client, signer *Signer, m Message, number int, now, giveUpAt time.Time) Attempt {
	if signer == nil {
		return NotSent(m.ID, number, now, giveUpAt, errors.New("no webhook signing key is configured"), true)
	}
	started := time.Now()
	answer := Post(ctx, client, signer, m, now)
	a := Attempt{MessageID: m.ID, Number: number, At: now, Duration: time.Since(started), Sent: true, Answer: answer}
	if answer.Outcome == Failed {
		a.Next = nextAttempt(m.ID, number, now, giveUpAt)
	}
	return a
}

// NotSent is attempt number of message id that sent nothing, err saying
// why; it is tried again on the schedule when retry is set (err may pass),
// else given up.
func NotSent(id string, number int, now, giveUpAt time.Time, err error, retry bool) Attempt {
	a := Attempt{MessageID: id, Number: number, At: now, Answer: Answer{Outcome: Failed, Err: fmt.Errorf("not sent: %w", err)}}
	if retry {
		a.Next = nextAttempt(id, number, now, giveUpAt)
	}
	return a
}

// nextAttempt is when attempt number of id, failed at now, is followed by
// another; zero when it is given up.
func nextAttempt(id string, number int, now, giveUpAt time.Time) time.Time {
	wait, retry := RetryAfter(id, number, now, giveUpAt)
	if !retry {
		return time.Time{}
	}
	return now.Add(wait)
}
