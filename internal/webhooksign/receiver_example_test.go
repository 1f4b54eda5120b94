package webhooksign_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/webhooksign"
)

// verifyWebhook is the receiver-side check the README shows, kept here so
// the README's code is known to work. It uses only the standard library.
func verifyWebhook(pub ed25519.PublicKey, r *http.Request, body []byte) error {
	id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return errors.New("missing or stale webhook-timestamp")
	}
	signed := []byte(id + "." + ts + "." + string(body))
	for _, entry := range strings.Fields(r.Header.Get("webhook-signature")) {
		sig, ok := strings.CutPrefix(entry, "v1a,")
		if !ok {
			continue
		}
		if raw, err := base64.StdEncoding.DecodeString(sig); err == nil && ed25519.Verify(pub, signed, raw) {
			return nil
		}
	}
	return errors.New("no valid webhook signature")
}

// publicKeyFrom decodes data.attributes.public_key of GET
// /v1/webhooks/public-key, as the README shows.
func publicKeyFrom(whpk string) ed25519.PublicKey {
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(whpk, "whpk_"))
	return ed25519.PublicKey(raw)
}

func TestReadmeReceiverExample(t *testing.T) {
	t.Parallel()
	s := newSigner(t)
	pub := publicKeyFrom(webhooksign.EncodePublicKey(s.PublicKey()))
	body := []byte(`{"event":"llm-task.completed","data":{}}`)
	sent := time.Now()

	req := httptest.NewRequest(http.MethodPost, "/hooks", bytes.NewReader(body))
	req.Header.Set("webhook-id", "job-1-2")
	req.Header.Set("webhook-timestamp", strconv.FormatInt(sent.Unix(), 10))
	req.Header.Set("webhook-signature", s.Sign("job-1-2", sent, body))
	require.NoError(t, verifyWebhook(pub, req, body))

	require.Error(t, verifyWebhook(pub, req, []byte(`{"event":"llm-task.failed","data":{}}`)))
	req.Header.Set("webhook-timestamp", strconv.FormatInt(sent.Add(-10*time.Minute).Unix(), 10))
	require.Error(t, verifyWebhook(pub, req, body))
}
