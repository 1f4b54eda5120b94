package providertest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// Env is the environment of an adapter's test: name holds value, and no
// other variable is set.
func Env(name, value string) providers.Option {
	return providers.WithLookupEnv(func(n string) (string, bool) {
		if n != name {
			return "", false
		}
		return value, true
	})
}

// NoEnv is an environment where no variable is set.
func NoEnv() providers.Option {
	return providers.WithLookupEnv(func(string) (string, bool) { return "", false })
}

// Provider is provider id with settings, offering svc with capab.
func Provider(id string, settings map[string]any, svc jobs.ServiceID, capab providers.Capability) *providers.Provider {
	return &providers.Provider{ID: id, Settings: settings, Services: map[jobs.ServiceID]*providers.Capability{svc: &capab}}
}

// Call is a call of p's service svc with input and options, JSON ("" for
// no options).
func Call(p *providers.Provider, svc jobs.ServiceID, input, options string) providers.Call {
	return providers.Call{Service: svc, Provider: p, Input: json.RawMessage(input), Options: json.RawMessage(options)}
}

// Audio is what AudioMedia writes.
const Audio = "RIFF....WAVE"

// AudioMedia writes Audio to a file of the test and returns it as a
// call's media, as the media stage extracts audio, lasting duration
// seconds.
func AudioMedia(t testing.TB, duration float64) *providers.Media {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audio.wav")
	require.NoError(t, os.WriteFile(path, []byte(Audio), 0o600))
	return &providers.Media{Path: path, ContentType: "audio/wav", Size: int64(len(Audio)), Duration: duration}
}

// Run runs call on a and decodes its result into a T when it succeeds;
// progress is what the call reported (to call.Report as well, when set).
func Run[T any](ctx context.Context, t testing.TB, a providers.Adapter, call providers.Call) (res T, progress []int, err error) {
	t.Helper()
	report := call.Report
	call.Report = func(p int) {
		progress = append(progress, p)
		if report != nil {
			report(p)
		}
	}
	out, err := a.Run(ctx, call)
	if err == nil {
		require.NoError(t, json.Unmarshal(out, &res))
	}
	return res, progress, err
}
