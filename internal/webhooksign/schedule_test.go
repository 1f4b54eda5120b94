package webhooksign_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/webhooksign"
)

func TestBackoffDoublesUpToAnHourWithJitter(t *testing.T) {
	t.Parallel()
	for attempt := 1; attempt < 30; attempt++ {
		d := webhooksign.Backoff(attempt, "m")
		base := min(time.Second<<min(attempt-1, 12), time.Hour)
		require.GreaterOrEqual(t, d, time.Duration(float64(base)*0.8), "attempt %d", attempt)
		require.LessOrEqual(t, d, time.Duration(float64(base)*1.2), "attempt %d", attempt)
	}
	require.NotEqual(t, webhooksign.Backoff(5, "job-a-1"), webhooksign.Backoff(5, "job-b-1"), "messages spread out")
	require.Equal(t, webhooksign.Backoff(5, "job-a-1"), webhooksign.Backoff(5, "job-a-1"), "the same on replay")
}

func TestRetryAfterGivesUpWhenTheNextAttemptIsPastTheWindow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	wait := webhooksign.Backoff(3, "m")
	got, retry := webhooksign.RetryAfter("m", 3, now, now.Add(wait))
	require.True(t, retry, "due exactly at the give-up time")
	require.Equal(t, wait, got)
	_, retry = webhooksign.RetryAfter("m", 3, now, now.Add(wait-time.Nanosecond))
	require.False(t, retry)

	require.Equal(t, webhooksign.RetryWindow, webhooksign.Window(0))
	require.Equal(t, time.Minute, webhooksign.Window(time.Minute))
}
