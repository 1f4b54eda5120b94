package webhooksign_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/webhooksign"
)

func TestSendSchedulesTheNextAttemptOfAFailure(t *testing.T) {
	t.Parallel()
	s := newSigner(t)
	now := time.Now()
	giveUpAt := now.Add(webhooksign.RetryWindow)
	answering := func(status int) webhooksign.Message {
		srv := newHookServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) })
		return message(srv.URL)
	}

	failed := webhooksign.Send(context.Background(), guarded(), s, answering(http.StatusBadGateway), 2, now, giveUpAt)
	require.True(t, failed.Sent)
	require.Equal(t, http.StatusBadGateway, failed.Status)
	require.Equal(t, "receiver answered 502 Bad Gateway", failed.LogError())
	require.Equal(t, now.Add(webhooksign.Backoff(2, failed.MessageID)), failed.Next)
	require.False(t, failed.GivenUp())

	late := webhooksign.Send(context.Background(), guarded(), s, answering(http.StatusBadGateway), 2, now, now)
	require.True(t, late.GivenUp(), "the next attempt would come after the window")

	gone := webhooksign.Send(context.Background(), guarded(), s, answering(http.StatusGone), 1, now, giveUpAt)
	require.True(t, gone.GivenUp(), "410 is not retried")

	delivered := webhooksign.Send(context.Background(), guarded(), s, answering(http.StatusNoContent), 1, now, giveUpAt)
	require.Equal(t, webhooksign.Delivered, delivered.Outcome)
	require.False(t, delivered.GivenUp())
	require.Empty(t, delivered.LogError())

	refused := webhooksign.Send(context.Background(), nil, s, answering(http.StatusNoContent), 1, now, giveUpAt)
	require.True(t, refused.GivenUp())
	require.Contains(t, refused.LogError(), "refused: ")
	require.Contains(t, refused.LogError(), "; webhooks go to public addresses only")

	unsigned := webhooksign.Send(context.Background(), guarded(), nil, answering(http.StatusNoContent), 1, now, giveUpAt)
	require.False(t, unsigned.Sent)
	require.False(t, unsigned.GivenUp(), "a deployment given its key delivers it")
	require.Equal(t, "not sent: no webhook signing key is configured", unsigned.LogError())
}

func TestNotSentRetriesOnlyWhatMayPass(t *testing.T) {
	t.Parallel()
	now := time.Now()
	passing := webhooksign.NotSent("m", 1, now, now.Add(time.Hour), errors.New("the store is away"), true)
	require.Equal(t, now.Add(webhooksign.Backoff(1, "m")), passing.Next)
	require.Equal(t, "not sent: the store is away", passing.LogError())
	final := webhooksign.NotSent("m", 1, now, now.Add(time.Hour), errors.New("no URL"), false)
	require.True(t, final.GivenUp())
	require.False(t, final.Sent)
}
