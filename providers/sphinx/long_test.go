//go:build unix

package sphinx

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// A 10-minute file made of the test sentences over and over: the words
// come back, each recognizer process stays at the model's size, and the
// adapter's heap does not grow with the audio (docs/benchmarks.md, Local
// transcription). SPHINX_COMPARE=1 also runs one recognizer over the
// whole file, the long-lived alternative.
func TestTenMinutesInChunksWithFlatMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10-minute recognition takes a minute or more")
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
	stopHeap, peakHeap := sampleHeap()
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
	errs, words := wordErrors(reference, res.Text)
	minutes := media.Duration / 60
	t.Logf("per chunk: %.1f min of audio in %s (%.1f s per audio minute), recognizers' CPU %s, %d recognizer processes, peak RSS %d MiB each, adapter heap peak %d MiB, WER %.1f%%, %d segments",
		minutes, elapsed.Round(time.Second), elapsed.Seconds()/minutes, cpu.Round(time.Second), processes, peakRSS>>10, *peakHeap>>20, 100*float64(errs)/float64(words), len(res.Segments))
	require.Less(t, float64(errs)/float64(words), 0.25)
	require.GreaterOrEqual(t, processes, 20, "30-second chunks")
	require.Less(t, peakRSS>>10, int64(200), "a recognizer holds its model and one chunk, MiB")
	require.Less(t, *peakHeap>>20, uint64(64), "the adapter holds no audio, MiB")
	require.Greater(t, len(progress), 10)
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
		errs, _ := wordErrors(reference, strings.Join(texts, " "))
		t.Logf("one process: %s (%.1f s per audio minute), CPU %s, peak RSS %d MiB, WER %.1f%%",
			elapsed.Round(time.Second), elapsed.Seconds()/minutes, cpu.Round(time.Second), peakRSS>>10, 100*float64(errs)/float64(words))
	}
}

// sampleHeap samples the Go heap in use every 50 ms until stopped.
func sampleHeap() (stop func(), peak *uint64) {
	peak = new(uint64)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		var m runtime.MemStats
		tick := time.NewTicker(50 * time.Millisecond)
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
