// Package mediatest makes real media files for tests with ffmpeg: tones,
// silence, videos with several audio tracks, corrupt files.
package mediatest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// RequireTools skips the test when ffmpeg or ffprobe is missing, saying
// how to install them (or fails it: Installed).
func RequireTools(t testing.TB) {
	t.Helper()
	Require(t, "ffmpeg", "ffprobe")
}

// installHints say how to get each tool a test may need.
var installHints = map[string]string{
	"ffmpeg":                  "apt-get install ffmpeg",
	"ffprobe":                 "apt-get install ffmpeg",
	"tesseract":               "apt-get install tesseract-ocr tesseract-ocr-eng",
	"pocketsphinx_continuous": "apt-get install pocketsphinx pocketsphinx-en-us",
	"flite":                   "apt-get install flite",
	"apertium-apy":            "apt-get install apertium-apy apertium-eng-spa",
}

// Require skips the test when one of tools is missing, saying how to
// install it (make test installs them all when it can: root on Debian or
// Ubuntu); see Installed for when it fails instead.
func Require(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			Installed(t, fmt.Errorf("%s is not installed: %s (or make engines) to run this test", tool, installHints[tool]))
		}
	}
}

// Installed skips the test when err, a check for something a test needs
// (such as an engine's model), says it is missing, unless
// GATEWAY_REQUIRE_MEDIA_TOOLS=1 or GATEWAY_REQUIRE_ENGINES=1 (a machine
// after make engines), in which case the test fails.
func Installed(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("GATEWAY_REQUIRE_MEDIA_TOOLS") == "1" || os.Getenv("GATEWAY_REQUIRE_ENGINES") == "1" {
		t.Fatal(err)
	}
	t.Skip(err)
}

// ffmpeg runs ffmpeg with args and fails the test with its output when it
// fails.
func ffmpeg(t testing.TB, args ...string) {
	t.Helper()
	RequireTools(t)
	args = append([]string{"-nostdin", "-hide_banner", "-loglevel", "error", "-y"}, args...)
	if out, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, out)
	}
}

func secs(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) }

// Tone is seconds of a 440 Hz tone as a WAV file.
func Tone(t testing.TB, dir string, seconds float64) string {
	t.Helper()
	path := filepath.Join(dir, "tone.wav")
	ffmpeg(t, "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100", "-t", secs(seconds), path)
	return path
}

// Silence is seconds of silence as a WAV file.
func Silence(t testing.TB, dir string, seconds float64) string {
	t.Helper()
	path := filepath.Join(dir, "silence.wav")
	ffmpeg(t, "-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-t", secs(seconds), path)
	return path
}

// TrackFrequency is the tone of audio track i of a Video: 440 Hz, 880 Hz,
// 1320 Hz...
func TrackFrequency(i int) int { return 440 * (i + 1) }

// Video is an MP4 of seconds of a 160x120 test pattern at 25 fps with
// audioTracks audio tracks, track i a tone of TrackFrequency(i) Hz.
func Video(t testing.TB, dir string, seconds float64, audioTracks int) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("video-%gs-%da.mp4", seconds, audioTracks))
	args := []string{"-f", "lavfi", "-i", "testsrc=size=160x120:rate=25"}
	for i := range audioTracks {
		args = append(args, "-f", "lavfi", "-i", fmt.Sprintf("sine=frequency=%d:sample_rate=44100", TrackFrequency(i)))
	}
	args = append(args, "-map", "0:v")
	for i := range audioTracks {
		args = append(args, "-map", strconv.Itoa(i+1)+":a")
	}
	args = append(args, "-t", secs(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-movflags", "+faststart")
	if audioTracks > 0 {
		args = append(args, "-c:a", "aac", "-b:a", "48k")
	}
	ffmpeg(t, append(args, path)...)
	return path
}

// Corrupt is an MP4 whose header is intact but whose media data is
// garbage: it probes, but its audio does not decode.
func Corrupt(t testing.TB, dir string) string {
	t.Helper()
	video := Video(t, t.TempDir(), 2, 1)
	data, err := os.ReadFile(video)
	if err != nil {
		t.Fatal(err)
	}
	mdat := bytes.Index(data, []byte("mdat"))
	if mdat < 0 {
		t.Fatal("mediatest: no mdat box in the video")
	}
	for i := mdat + 8; i < len(data); i++ {
		data[i] ^= byte(i*7 + 13)
	}
	path := filepath.Join(dir, "corrupt.mp4")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Text is a plain text file.
func Text(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(path, []byte("These are meeting notes, not audio.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// SceneVideo is an MP4 of three 2-second scenes (black, white, black: two
// hard cuts, at 2 s and 4 s) with text burned into every frame.
func SceneVideo(t testing.TB, dir, text string) string {
	t.Helper()
	path := filepath.Join(dir, "scenes.mp4")
	scene := func(color, label string) string {
		return fmt.Sprintf("color=c=%s:s=320x240:d=2:r=25[%s]", color, label)
	}
	graph := scene("black", "a") + ";" + scene("white", "b") + ";" + scene("black", "c") +
		";[a][b][c]concat=n=3:v=1:a=0,drawtext=text='" + text + "':fontsize=40:fontcolor=gray:x=20:y=100"
	ffmpeg(t, "-f", "lavfi", "-i", graph, "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", path)
	return path
}
