package media_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
	"github.com/ai-job-gateway/gateway/internal/netguard"
)

func tools(t *testing.T) media.Tools {
	t.Helper()
	mediatest.RequireTools(t)
	tt, err := media.FindTools()
	require.NoError(t, err)
	return tt
}

// requireInputError checks that err is a non-retryable *media.Error with code, and
// that its message holds want and no local path.
func requireInputError(t *testing.T, err error, code, want string) {
	t.Helper()
	var perr *media.Error
	require.True(t, errors.As(err, &perr), "%v", err)
	require.False(t, perr.Retryable, "%v", err)
	require.Equal(t, code, perr.Code, "%v", err)
	require.Contains(t, perr.Message, want)
	require.NotContains(t, perr.Message, os.TempDir(), "no local paths in a user's error")
}

func TestProbe(t *testing.T) {
	t.Parallel()
	tl := tools(t)
	dir := t.TempDir()

	tone, err := tl.Probe(t.Context(), jobs.Transcriptions, mediatest.Tone(t, dir, 1.5))
	require.NoError(t, err)
	require.InDelta(t, 1.5, tone.Duration, 0.05)
	require.Equal(t, []media.Stream{{Index: 0, Type: "audio", Codec: "pcm_s16le", Channels: 1, SampleRate: 44100}}, tone.Streams)
	_, ok := tone.VideoMetadata()
	require.False(t, ok, "a tone has no video")

	video, err := tl.Probe(t.Context(), jobs.VideoAnalyses, mediatest.Video(t, dir, 2, 2))
	require.NoError(t, err)
	require.InDelta(t, 2, video.Duration, 0.1)
	require.Len(t, video.AudioStreams(), 2)
	meta, ok := video.VideoMetadata()
	require.True(t, ok)
	require.Equal(t, jobs.VideoMetadata{Duration: video.Duration, Width: 160, Height: 120, FrameRate: 25, Format: "mp4", Codec: "h264"}, *meta)
}

func TestProbeRefusesWhatIsNotMedia(t *testing.T) {
	t.Parallel()
	tl := tools(t)
	_, err := tl.Probe(t.Context(), jobs.Transcriptions, mediatest.Text(t, t.TempDir()))
	requireInputError(t, err, jobs.CodeAudioUnreadable, "the media cannot be read")
	_, err = tl.Probe(t.Context(), jobs.VideoAnalyses, mediatest.Text(t, t.TempDir()))
	requireInputError(t, err, jobs.CodeInputUnreadable, "the media cannot be read")
}

// dominantFrequency estimates a mono 16-bit WAV's frequency from its zero
// crossings, after checking the WAV header says 16 kHz mono PCM.
func dominantFrequency(t *testing.T, path string) float64 {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "RIFF", string(data[:4]))
	require.Equal(t, uint16(1), binary.LittleEndian.Uint16(data[20:]), "PCM")
	require.Equal(t, uint16(1), binary.LittleEndian.Uint16(data[22:]), "mono")
	require.Equal(t, uint32(16000), binary.LittleEndian.Uint32(data[24:]), "16 kHz")
	require.Equal(t, uint16(16), binary.LittleEndian.Uint16(data[34:]), "16-bit")
	pcm := data[44:]
	crossings, prev := 0, int16(0)
	for i := 0; i+1 < len(pcm); i += 2 {
		v := int16(binary.LittleEndian.Uint16(pcm[i:]))
		if (prev < 0) != (v < 0) {
			crossings++
		}
		prev = v
	}
	seconds := float64(len(pcm)/2) / 16000
	return float64(crossings) / 2 / seconds
}

func TestExtractAudioTrack(t *testing.T) {
	t.Parallel()
	tl := tools(t)
	dir := t.TempDir()
	src := mediatest.Video(t, dir, 2, 2)
	probe, err := tl.Probe(t.Context(), jobs.Transcriptions, src)
	require.NoError(t, err)
	for track := range 2 {
		t.Run("track "+strconv.Itoa(track), func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "audio.wav")
			require.NoError(t, tl.ExtractAudio(t.Context(), probe, src, track, dst))
			require.InEpsilon(t, float64(mediatest.TrackFrequency(track)), dominantFrequency(t, dst), 0.05)
		})
	}
}

func TestExtractAudioFailures(t *testing.T) {
	t.Parallel()
	tl := tools(t)
	dir := t.TempDir()
	probeOf := func(path string) media.Probe {
		p, err := tl.Probe(t.Context(), jobs.Transcriptions, path)
		require.NoError(t, err)
		return p
	}
	twoTracks := mediatest.Video(t, dir, 1, 2)
	silent := mediatest.Video(t, dir, 1, 0)
	corrupt := mediatest.Corrupt(t, dir)
	cases := []struct {
		name, src string
		track     int
		want      string
	}{
		{"track out of range", twoTracks, 2, "input.audio_track is 2, but the media has 2 audio tracks (indexes 0 to 1)"},
		{"negative track", twoTracks, -1, "input.audio_track is -1"},
		{"no audio", silent, 0, "the media has no audio track"},
		{"corrupt audio", corrupt, 0, "audio track 0 cannot be decoded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "audio.wav")
			err := tl.ExtractAudio(t.Context(), probeOf(tc.src), tc.src, tc.track, dst)
			requireInputError(t, err, jobs.CodeAudioUnreadable, tc.want)
			require.NoFileExists(t, dst)
		})
	}

	t.Run("silence is audio", func(t *testing.T) {
		src := mediatest.Silence(t, dir, 1)
		dst := filepath.Join(t.TempDir(), "audio.wav")
		require.NoError(t, tl.ExtractAudio(t.Context(), probeOf(src), src, 0, dst))
		require.FileExists(t, dst)
	})
}

func TestExtractAudioStopsWithItsContext(t *testing.T) {
	t.Parallel()
	tl := tools(t)
	src := mediatest.Video(t, t.TempDir(), 120, 1)
	probe, err := tl.Probe(t.Context(), jobs.Transcriptions, src)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	dst := filepath.Join(t.TempDir(), "audio.wav")
	require.ErrorIs(t, tl.ExtractAudio(ctx, probe, src, 0, dst), context.Canceled)
	require.NoFileExists(t, dst)
}

func TestFetch(t *testing.T) {
	t.Parallel()
	const size = 100_000
	body := strings.Repeat("x", size)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/file":
			_, _ = io.WriteString(w, body)
		case "/streamed":
			// No Content-Length: the cap must hold while streaming.
			w.Header().Set("Content-Type", "video/mp4")
			for range 10 {
				_, _ = io.WriteString(w, body[:size/10])
				w.(http.Flusher).Flush()
			}
		case "/missing":
			http.NotFound(w, r)
		case "/busy":
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	client := netguard.NewMediaClient(true, 10*time.Second)
	fetch := func(path string, maxBytes int64) (media.Fetched, string, error) {
		dst := filepath.Join(t.TempDir(), "source")
		got, err := media.Fetch(t.Context(), client, jobs.Transcriptions, srv.URL+path, dst, media.Limits{MaxBytes: maxBytes})
		return got, dst, err
	}

	got, dst, err := fetch("/file", size)
	require.NoError(t, err)
	require.Equal(t, int64(size), got.Size, "exactly at the cap is fine")
	data, err := os.ReadFile(dst)
	require.NoError(t, err)
	require.Equal(t, body, string(data))

	got, _, err = fetch("/streamed", 0)
	require.NoError(t, err)
	require.Equal(t, media.Fetched{Size: size, ContentType: "video/mp4"}, got)

	for _, path := range []string{"/file", "/streamed"} {
		_, dst, err = fetch(path, size-1)
		requireInputError(t, err, jobs.CodeFileTooLarge, "input.url is larger than")
		require.NoFileExists(t, dst, "the partial file is removed")
	}

	_, _, err = fetch("/missing", 0)
	requireInputError(t, err, jobs.CodeMediaUnavailable, "404")
	_, _, err = fetch("/busy", 0)
	var perr *media.Error
	require.True(t, errors.As(err, &perr))
	require.True(t, perr.Retryable)

	_, err = media.Fetch(t.Context(), netguard.NewMediaClient(false, time.Second), jobs.Transcriptions, srv.URL+"/file", filepath.Join(t.TempDir(), "x"), media.Limits{})
	requireInputError(t, err, jobs.CodeMediaAddressForbidden, "")
}

func TestPlaylistsAreNotOpened(t *testing.T) {
	t.Parallel()
	tl := tools(t)
	// A real media file of the worker's: without the format whitelist,
	// ffprobe would open the playlist and probe it.
	secret := filepath.Join(t.TempDir(), "secret.ts")
	out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=d=1", "-f", "mpegts", secret).CombinedOutput()
	require.NoError(t, err, "%s", out)
	playlist := filepath.Join(t.TempDir(), "talk.mp4")
	require.NoError(t, os.WriteFile(playlist, []byte("#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\n"+secret+"\n#EXT-X-ENDLIST\n"), 0o600))
	_, err = tl.Probe(t.Context(), jobs.Transcriptions, playlist)
	requireInputError(t, err, jobs.CodeAudioUnreadable, "the media cannot be read")
}
