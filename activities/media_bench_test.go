package activities_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/activities"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/sandbox"
)

// BenchmarkMediaStageOneGiB runs a transcription's media stage (fetch,
// probe, audio extraction) over a 1 GiB video and reports by how much it
// raised the process's peak resident memory (docs/benchmarks.md, The media stage).
// The video is raw frames with PCM audio, made once by ffmpeg in the
// system's temporary directory:
//
//	go test -run '^$' -bench MediaStageOneGiB -benchtime 1x ./activities/
func BenchmarkMediaStageOneGiB(b *testing.B) {
	video := oneGiBVideo(b)
	bench := newMediaBench(b)
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Dir(video))))
	defer srv.Close()
	input := json.RawMessage(`{"type":"video","url":"` + srv.URL + "/" + filepath.Base(video) + `"}`)
	bench.acts.Media.Providers = unlimitedRegistry(b)

	before := residentBytes(b, "VmRSS")
	resetPeakResident(b)
	b.ResetTimer()
	for b.Loop() {
		v, err := bench.env.ExecuteActivity(acts.Media.FetchMedia, activities.MediaInput{JobID: "job-big", Service: jobs.Transcriptions, Input: input})
		require.NoError(b, err)
		var source activities.MediaFile
		require.NoError(b, v.Get(&source))
		require.GreaterOrEqual(b, source.Size, int64(1<<30))
		v, err = bench.env.ExecuteActivity(acts.Media.ProbeMedia, activities.ProbeInput{JobID: "job-big", Service: jobs.Transcriptions, Source: source})
		require.NoError(b, err)
		var probe media.Probe
		require.NoError(b, v.Get(&probe))
		_, err = bench.env.ExecuteActivity(acts.Media.ExtractAudio, activities.ExtractInput{JobID: "job-big", Source: source, Probe: probe})
		require.NoError(b, err)
		_, err = bench.env.ExecuteActivity(acts.Media.RemoveJobMedia, "job-big")
		require.NoError(b, err)
	}
	b.StopTimer()
	increase := residentBytes(b, "VmHWM") - before
	b.ReportMetric(float64(increase)/(1<<20), "peak-RSS-increase-MiB")
}

// oneGiBVideo makes (once) a video of at least 1 GiB: raw 320x240 frames
// and PCM audio in a NUT file, fast to write and to read.
func oneGiBVideo(b *testing.B) string {
	b.Helper()
	path := filepath.Join(os.TempDir(), "gateway-bench-1gib.nut")
	if info, err := os.Stat(path); err == nil && info.Size() >= 1<<30 {
		return path
	}
	out, err := exec.Command("ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
		"-f", "lavfi", "-i", "testsrc=size=320x240:rate=25",
		"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000",
		"-t", "380", "-c:v", "rawvideo", "-pix_fmt", "yuv420p", "-c:a", "pcm_s16le", path).CombinedOutput()
	require.NoError(b, err, "%s", out)
	return path
}

// unlimitedRegistry is the media bench's catalog without a size cap.
func unlimitedRegistry(b *testing.B) *providers.Registry {
	b.Helper()
	return registryOf(b, strings.ReplaceAll(mediaCatalog, "max_file_size_mb: 1", "max_file_size_mb: 0"), map[string]providers.Factory{
		"sandbox": func(p *providers.Provider) (providers.Adapter, error) { return sandbox.New(p) },
	})
}

// resetPeakResident resets the kernel's peak RSS of this process (VmHWM).
func resetPeakResident(b *testing.B) {
	b.Helper()
	require.NoError(b, os.WriteFile("/proc/self/clear_refs", []byte("5"), 0))
}

// residentBytes reads a memory figure of this process from
// /proc/self/status.
func residentBytes(b *testing.B, field string) int64 {
	b.Helper()
	f, err := os.Open("/proc/self/status")
	require.NoError(b, err)
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		name, value, ok := strings.Cut(scanner.Text(), ":")
		if ok && name == field {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
			require.NoError(b, err)
			return kb << 10
		}
	}
	require.NoError(b, scanner.Err())
	panic(fmt.Sprintf("no %s in /proc/self/status", field))
}
