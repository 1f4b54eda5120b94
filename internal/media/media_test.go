package media_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/internal/netguard"
	"github.com/ai-job-gateway/gateway/providers"
)

func TestRefusedAddressIsAnInputError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()

	_, err := media.Head(context.Background(), netguard.NewMediaClient(false, 5*time.Second), providers.Transcriptions, srv.URL+"/a.wav")
	var perr *providers.Error
	require.True(t, errors.As(err, &perr), "%v", err)
	require.Equal(t, providers.KindInput, perr.Kind, "an address the gateway may not reach fails the job, no retries")
	require.Equal(t, providers.CodeMediaAddressForbidden, perr.Code)

	size, err := media.Head(context.Background(), netguard.NewMediaClient(true, 5*time.Second), providers.Transcriptions, srv.URL+"/a.wav")
	require.NoError(t, err, "allowed with --allow-private-networks")
	require.Equal(t, int64(-1), size, "no Content-Length from this server")
}

func TestUnreachableHostIsRetryable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	url := srv.URL
	srv.Close()
	_, err := media.Head(context.Background(), netguard.NewMediaClient(true, time.Second), providers.Transcriptions, url+"/a.wav")
	var perr *providers.Error
	require.True(t, errors.As(err, &perr))
	require.Equal(t, providers.KindRetryable, perr.Kind)
}
