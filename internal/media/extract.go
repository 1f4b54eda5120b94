package media

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// ExtractAudio writes audio track `track` (zero-based among the audio
// streams) of src to dst as 16 kHz mono 16-bit PCM WAV, the one format
// every transcription adapter of the gateway takes (docs/media.md). The
// whole track is decoded: media with no audio, a track out of range, or
// audio that does not decode to the end is a non-retryable AUDIO_UNREADABLE
// error saying what was wrong. When ctx ends, ffmpeg is killed and the
// partial dst removed.
func (t Tools) ExtractAudio(ctx context.Context, probe Probe, src string, track int, dst string) error {
	audio := probe.AudioStreams()
	switch {
	case len(audio) == 0:
		return inputError(jobs.CodeAudioUnreadable, "the media has no audio track", nil)
	case track < 0 || track >= len(audio):
		return inputError(jobs.CodeAudioUnreadable,
			fmt.Sprintf("input.audio_track is %d, but the media has %s (%s)", track, plural(len(audio), "audio track"), indexes(len(audio))), nil)
	}
	args := append([]string{"-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-xerror"}, InputArgs(src)...)
	args = append(args, "-map", "0:a:"+strconv.Itoa(track), "-vn", "-sn", "-dn",
		"-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", "-f", "wav", dst)
	_, stderr, err := run(ctx, t.FFmpeg, args...)
	if err == nil && stderr != "" {
		// ffmpeg reports damaged audio on stderr and may still exit 0.
		err = fmt.Errorf("ffmpeg reported errors")
	}
	if err != nil {
		_ = os.Remove(dst)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return inputError(jobs.CodeAudioUnreadable,
			fmt.Sprintf("audio track %d cannot be decoded%s", track, reason(stderr)), nil)
	}
	return nil
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// indexes lists the valid track numbers: "index 0", "indexes 0 to 2".
func indexes(n int) string {
	if n == 1 {
		return "index 0"
	}
	return fmt.Sprintf("indexes 0 to %d", n-1)
}
