//go:build unix

package sphinx

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
	"github.com/ai-job-gateway/gateway/providers"
)

// Ten minutes of synthetic audio through a fake recognizer: at least 20
// chunks, and the adapter's heap grows by far less than the file's 19 MB
// (it reads the audio in place). Not parallel: the heap is the process's.
func TestTenMinutesInChunksHoldNoAudio(t *testing.T) {
	a, calls := fakeRecognizer(t, `echo "INFO: cmn_live.c(138): Update to   < 54.16 15.36 >" >&2
echo "hello there"
echo "<s> 0.100 0.200 1.0"
echo "hello 0.210 0.600 0.9"
echo "there 0.700 0.900 0.8"
echo "</s> 0.910 0.950 1.0"
`)
	path := filepath.Join(t.TempDir(), "ten-minutes.wav")
	writeSyntheticSpeech(t, path, 600)

	// Collect often, so that the peak is what the adapter holds, not
	// garbage below the default 4 MiB goal.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	stop, peak := sampleHeap(2 * time.Millisecond)
	res, err := transcribe(t, a, path, `{"language":"en"}`)
	stop()
	require.NoError(t, err)
	grown := int64(*peak) - int64(before.HeapInuse)
	t.Logf("heap in use %d KiB before, peak %d KiB", before.HeapInuse>>10, *peak>>10)
	require.Less(t, grown, int64(4<<20), "the adapter holds no audio: heap grown by %d KiB", grown>>10)

	chunks := len(calls())
	require.GreaterOrEqual(t, chunks, 20, "chunks of 30 s at most")
	require.Len(t, res.Segments, chunks)
	requireInOrder(t, res.Segments)
	require.Less(t, res.Segments[len(res.Segments)-1].End, 600.0)
}

// writeSyntheticSpeech writes seconds of 16 kHz mono WAV, bursts of
// noise with a pause every few seconds, a second at a time.
func writeSyntheticSpeech(t *testing.T, path string, seconds int) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	header := wavBytes(sampleRate, 1, nil)
	binary.LittleEndian.PutUint32(header[4:], uint32(len(header)-8+2*seconds*sampleRate))
	binary.LittleEndian.PutUint32(header[len(header)-4:], uint32(2*seconds*sampleRate))
	_, err = f.Write(header)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 4))
	second := make([]byte, 2*sampleRate)
	for s := range seconds {
		for i := range sampleRate {
			v := int16(0)
			if s%7 != 6 || i < sampleRate/3 { // a pause in every seventh second
				v = int16(rng.IntN(8000) - 4000)
			}
			binary.LittleEndian.PutUint16(second[2*i:], uint16(v))
		}
		_, err = f.Write(second)
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
}

// requireInOrder: segments and their words follow each other in time,
// across chunks.
func requireInOrder(t *testing.T, segs []jobs.Segment) {
	t.Helper()
	previousEnd := 0.0
	for _, seg := range segs {
		require.Less(t, seg.Start, seg.End, "%+v", seg)
		require.GreaterOrEqual(t, seg.Start, previousEnd, "%+v", seg)
		requireTimedWords(t, seg, previousEnd)
		previousEnd = seg.End
	}
}

// A 10-minute file made of the test sentences over and over, recognized
// for real (SPHINX_LONG=1, or make bench-transcription: about 80 s): the
// words come back in order and the figures of docs/benchmarks.md, Local
// transcription, are logged. SPHINX_COMPARE=1 also runs one recognizer
// over the whole file, the long-lived alternative.
func TestTenMinutesInChunksWithFlatMemory(t *testing.T) {
	if os.Getenv("SPHINX_LONG") != "1" {
		t.Skip("a 10-minute recognition takes a minute or more: SPHINX_LONG=1 (make bench-transcription) runs it")
	}
	requireEngine(t)
	round := speak(t, 0.8, sentences...)
	roundSeconds := mediaOf(t, round).Duration
	rounds := int(600/roundSeconds) + 1
	var list strings.Builder
	for range rounds {
		fmt.Fprintf(&list, "file '%s'\n", round)
	}
	path := concat(t, t.TempDir(), list.String())
	media := mediaOf(t, path)
	require.GreaterOrEqual(t, media.Duration, 600.0)

	a := newAdapter(t, nil)
	var mu sync.Mutex
	processes, peakRSS, cpu := 0, int64(0), time.Duration(0)
	a.observe = func(s *os.ProcessState) {
		mu.Lock()
		defer mu.Unlock()
		processes++
		cpu += s.UserTime() + s.SystemTime()
		peakRSS = max(peakRSS, s.SysUsage().(*syscall.Rusage).Maxrss) // KiB on Linux
	}
	stopHeap, peakHeap := sampleHeap(50 * time.Millisecond)
	started := time.Now()
	var progress []int
	out, err := a.Run(context.Background(), providers.Call{
		JobID: "job-long", Service: jobs.Transcriptions, Provider: a.provider,
		Input: json.RawMessage(`{"type":"audio","url":"https://example.com/long.wav"}`), Options: json.RawMessage(`{"language":"en"}`),
		Media: media, Report: func(p int) { progress = append(progress, p) },
	})
	elapsed := time.Since(started)
	stopHeap()
	require.NoError(t, err)
	var res jobs.TranscriptionResult
	require.NoError(t, json.Unmarshal(out, &res))

	reference := strings.Repeat(strings.Join(sentences, " ")+" ", rounds)
	errs, words := mediatest.WordErrors(reference, res.Text)
	minutes := media.Duration / 60
	t.Logf("per chunk: %.1f min of audio in %s (%.1f s per audio minute), recognizers' CPU %s, %d recognizer processes, peak RSS %d MiB each, adapter heap peak %d MiB, WER %.1f%%, %d segments",
		minutes, elapsed.Round(time.Second), elapsed.Seconds()/minutes, cpu.Round(time.Second), processes, peakRSS>>10, *peakHeap>>20, 100*float64(errs)/float64(words), len(res.Segments))
	require.Less(t, float64(errs)/float64(words), 0.25)
	require.GreaterOrEqual(t, processes, 20, "30-second chunks")
	require.Less(t, peakRSS>>10, int64(200), "a recognizer holds its model and one chunk, MiB")
	require.Greater(t, len(progress), 10)
	requireInOrder(t, res.Segments)
	require.Less(t, res.Segments[len(res.Segments)-1].End, media.Duration+0.1)

	if os.Getenv("SPHINX_COMPARE") == "1" {
		audio, err := openPCM(path)
		require.NoError(t, err)
		defer audio.Close()
		peakRSS, processes, cpu = 0, 0, 0
		started := time.Now()
		utterances, _, err := a.recognize(context.Background(), audio.section(0, audio.samples), 0, seconds(audio.samples), "")
		require.NoError(t, err)
		elapsed := time.Since(started)
		var texts []string
		for _, s := range segments(utterances) {
			texts = append(texts, s.Text)
		}
		errs, _ := mediatest.WordErrors(reference, strings.Join(texts, " "))
		t.Logf("one process: %s (%.1f s per audio minute), CPU %s, peak RSS %d MiB, WER %.1f%%",
			elapsed.Round(time.Second), elapsed.Seconds()/minutes, cpu.Round(time.Second), peakRSS>>10, 100*float64(errs)/float64(words))
	}
}

// sampleHeap samples the Go heap in use every interval until stopped.
func sampleHeap(interval time.Duration) (stop func(), peak *uint64) {
	peak = new(uint64)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		var m runtime.MemStats
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			*peak = max(*peak, m.HeapInuse)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); <-finished }, peak
}
