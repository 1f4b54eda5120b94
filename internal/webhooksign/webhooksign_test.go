package webhooksign_test

import (
	"crypto/ed25519"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/webhooksign"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func newSigner(t *testing.T) *webhooksign.Signer {
	t.Helper()
	seed, err := webhooksign.GenerateSeed()
	require.NoError(t, err)
	s, err := webhooksign.NewSigner(seed)
	require.NoError(t, err)
	return s
}

// TestSignMatchesReferenceImplementation checks a vector of the Standard
// Webhooks reference libraries (libraries/go/webhook_asymmetric_test.go).
func TestSignMatchesReferenceImplementation(t *testing.T) {
	t.Parallel()
	seed, err := webhooksign.DecodeSecretKey("whsk_VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk=")
	require.NoError(t, err)
	s, err := webhooksign.NewSigner(seed)
	require.NoError(t, err)
	got := s.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	require.Equal(t, "v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag==", got)
}

func TestVerify(t *testing.T) {
	t.Parallel()
	s := newSigner(t)
	other := newSigner(t)
	body := []byte(`{"event":"transcription.completed"}`)
	ts := strconv.FormatInt(now.Unix(), 10)
	sig := s.Sign("job-1", now, body)
	require.True(t, strings.HasPrefix(sig, "v1a,"))

	for _, tc := range []struct {
		name      string
		pub       ed25519.PublicKey
		msgID, ts string
		body      []byte
		header    string
		now       time.Time
		want      error
	}{
		{name: "valid", header: sig},
		{name: "valid among others", header: "v1,AAAA v1a,@@@ " + other.Sign("job-1", now, body) + " " + sig},
		{name: "4 minutes late", now: now.Add(4 * time.Minute), header: sig},
		{name: "4 minutes early", now: now.Add(-4 * time.Minute), header: sig},
		{name: "other key", pub: other.PublicKey(), header: sig, want: webhooksign.ErrNoSignature},
		{name: "body changed", body: []byte(`{"event":"transcription.failed"}`), header: sig, want: webhooksign.ErrNoSignature},
		{name: "id changed", msgID: "job-2", header: sig, want: webhooksign.ErrNoSignature},
		{name: "timestamp changed", ts: strconv.FormatInt(now.Unix()+1, 10), header: sig, want: webhooksign.ErrNoSignature},
		{name: "v1 prefix", header: "v1," + strings.TrimPrefix(sig, "v1a,"), want: webhooksign.ErrNoSignature},
		{name: "empty header", header: "", want: webhooksign.ErrNoSignature},
		{name: "truncated", header: "v1a,", want: webhooksign.ErrNoSignature},
		{name: "too old", now: now.Add(5*time.Minute + time.Second), header: sig, want: webhooksign.ErrTimestampTooOld},
		{name: "too new", now: now.Add(-5*time.Minute - time.Second), header: sig, want: webhooksign.ErrTimestampTooNew},
		{name: "timestamp not a number", ts: "2026-11-21T12:00:00Z", header: sig, want: webhooksign.ErrBadTimestamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pub, msgID, stamp, b, at := s.PublicKey(), "job-1", ts, body, now
			if tc.pub != nil {
				pub = tc.pub
			}
			if tc.msgID != "" {
				msgID = tc.msgID
			}
			if tc.ts != "" {
				stamp = tc.ts
			}
			if tc.body != nil {
				b = tc.body
			}
			if !tc.now.IsZero() {
				at = tc.now
			}
			err := webhooksign.Verify(pub, msgID, stamp, b, tc.header, at, 0)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestVerifyTolerance(t *testing.T) {
	t.Parallel()
	s := newSigner(t)
	sig := s.Sign("m", now, nil)
	ts := strconv.FormatInt(now.Unix(), 10)
	require.NoError(t, webhooksign.Verify(s.PublicKey(), "m", ts, nil, sig, now.Add(time.Hour), 2*time.Hour))
	require.ErrorIs(t, webhooksign.Verify(s.PublicKey(), "m", ts, nil, sig, now.Add(time.Minute), 30*time.Second), webhooksign.ErrTimestampTooOld)
}

func TestKeyEncodings(t *testing.T) {
	t.Parallel()
	s := newSigner(t)

	encoded := webhooksign.EncodePublicKey(s.PublicKey())
	require.True(t, strings.HasPrefix(encoded, "whpk_"))
	pub, err := webhooksign.DecodePublicKey(encoded)
	require.NoError(t, err)
	require.Equal(t, s.PublicKey(), pub)
	for _, bad := range []string{"", "whpk_", "whpk_!!!", "whsk_" + strings.TrimPrefix(encoded, "whpk_"), "whpk_AAAA"} {
		_, err := webhooksign.DecodePublicKey(bad)
		require.Error(t, err, bad)
	}

	seed, err := webhooksign.GenerateSeed()
	require.NoError(t, err)
	back, err := webhooksign.DecodeSecretKey(webhooksign.EncodeSecretKey(seed))
	require.NoError(t, err)
	require.Equal(t, seed, back)
	for _, bad := range []string{"", "whsk_", "whsk_AAAA", "whpk_" + strings.TrimPrefix(webhooksign.EncodeSecretKey(seed), "whsk_")} {
		_, err := webhooksign.DecodeSecretKey(bad)
		require.Error(t, err, bad)
	}

	_, err = webhooksign.NewSigner(seed[:31])
	require.Error(t, err)
}

func TestKeyIDIsShortAndStable(t *testing.T) {
	t.Parallel()
	seed, err := webhooksign.GenerateSeed()
	require.NoError(t, err)
	a, err := webhooksign.NewSigner(seed)
	require.NoError(t, err)
	b, err := webhooksign.NewSigner(seed)
	require.NoError(t, err)
	require.Len(t, a.KeyID(), 16)
	require.Equal(t, a.KeyID(), b.KeyID())
	require.Equal(t, a.KeyID(), webhooksign.KeyID(a.PublicKey()))
	require.NotEqual(t, a.KeyID(), newSigner(t).KeyID())
}
