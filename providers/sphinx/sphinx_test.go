//go:build unix

package sphinx

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media/mediatest"
	"github.com/ai-job-gateway/gateway/providers"
)

// requireEngine skips a test that needs the recognizer and its model,
// flite and ffmpeg when they are not installed (or fails it:
// mediatest.Installed).
func requireEngine(t *testing.T) {
	t.Helper()
	mediatest.Require(t, "flite", "ffmpeg")
	_, err := Find(DefaultModelDir)
	mediatest.Installed(t, err)
}

func newAdapter(t *testing.T, settings map[string]any) *Adapter {
	t.Helper()
	a, err := New(testProvider(settings))
	require.NoError(t, err)
	return a
}

// fakeAdapter is an adapter that runs bin (a fake recognizer script) with
// a model of empty files, in chunks of 30 s at most.
func fakeAdapter(t *testing.T, bin string) *Adapter {
	t.Helper()
	dir := t.TempDir()
	m := modelIn(dir)
	require.NoError(t, os.Mkdir(m.hmm, 0o700))
	require.NoError(t, os.WriteFile(m.lm, nil, 0o600))
	require.NoError(t, os.WriteFile(m.dict, nil, 0o600))
	return &Adapter{provider: testProvider(nil), bin: bin, model: m, maxChunk: 30 * sampleRate}
}

// fakeRecognizer is an adapter whose recognizer is a shell script that
// reads its chunk, appends its arguments as a line to a file, then runs
// body; calls reads those lines.
func fakeRecognizer(t *testing.T, body string) (a *Adapter, calls func() []string) {
	t.Helper()
	dir := t.TempDir()
	log, fake := filepath.Join(dir, "calls"), filepath.Join(dir, Recognizer)
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\ncat > /dev/null\necho \"$*\" >> "+log+"\n"+body), 0o700))
	return fakeAdapter(t, fake), func() []string {
		b, err := os.ReadFile(log)
		require.NoError(t, err)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

// silentWAV is seconds of silence as the media stage's WAV.
func silentWAV(t *testing.T, seconds int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "silent.wav")
	require.NoError(t, os.WriteFile(path, wavBytes(sampleRate, 1, make([]int16, seconds*sampleRate)), 0o600))
	return path
}

func testProvider(settings map[string]any) *providers.Provider {
	return &providers.Provider{ID: "sphinx-local", Adapter: "sphinx", Settings: settings,
		Services: map[jobs.ServiceID]*providers.Capability{jobs.Transcriptions: {
			Features: []string{"timestamps"}, Languages: []string{"en"},
			Pricing: providers.Pricing{Unit: providers.PerMinute, Amount: 0.006, Currency: "USD"},
		}}}
}

func ffmpeg(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("ffmpeg", append([]string{"-nostdin", "-hide_banner", "-loglevel", "error", "-y"}, args...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// silence writes seconds of 16 kHz mono silence.
func silence(t *testing.T, dir string, seconds float64) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("silence-%g.wav", seconds))
	ffmpeg(t, "-f", "lavfi", "-t", strconv.FormatFloat(seconds, 'f', -1, 64), "-i", "anullsrc=r=16000:cl=mono", "-c:a", "pcm_s16le", path)
	return path
}

// speak has flite say each sentence, with pause seconds of silence after
// each, as the media stage's audio: 16 kHz mono 16-bit PCM WAV.
func speak(t *testing.T, pause float64, sentences ...string) string {
	t.Helper()
	dir := t.TempDir()
	gap := silence(t, dir, pause)
	var list strings.Builder
	for i, s := range sentences {
		raw, wav := filepath.Join(dir, fmt.Sprintf("raw-%d.wav", i)), filepath.Join(dir, fmt.Sprintf("s-%d.wav", i))
		out, err := exec.Command("flite", "-voice", "awb", "-t", s, "-o", raw).CombinedOutput()
		require.NoError(t, err, "%s", out)
		ffmpeg(t, "-i", raw, "-ar", "16000", "-ac", "1", "-c:a", "pcm_s16le", wav)
		fmt.Fprintf(&list, "file '%s'\nfile '%s'\n", wav, gap)
	}
	return concat(t, dir, list.String())
}

func concat(t *testing.T, dir, list string) string {
	t.Helper()
	listFile, out := filepath.Join(dir, "list.txt"), filepath.Join(dir, "speech.wav")
	require.NoError(t, os.WriteFile(listFile, []byte(list), 0o600))
	ffmpeg(t, "-f", "concat", "-safe", "0", "-i", listFile, "-c", "copy", out)
	return out
}

func mediaOf(t *testing.T, path string) *providers.Media {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	return &providers.Media{Path: path, ContentType: "audio/wav", Size: info.Size(), Duration: float64(info.Size()-78) / 32000}
}

func transcribe(t *testing.T, a *Adapter, path, options string) (jobs.TranscriptionResult, error) {
	t.Helper()
	out, err := a.Run(context.Background(), providers.Call{
		JobID: "job-1", Service: jobs.Transcriptions, Provider: a.provider,
		Input: json.RawMessage(`{"type":"audio","url":"https://example.com/a.wav"}`), Options: json.RawMessage(options),
		Media: mediaOf(t, path),
	})
	var res jobs.TranscriptionResult
	if err == nil {
		require.NoError(t, json.Unmarshal(out, &res))
	}
	return res, err
}

// sentences are what flite says in the tests.
var sentences = []string{
	"The quick brown fox jumps over the lazy dog.",
	"Please call me tomorrow morning.",
	"I would like a cup of coffee.",
	"Thank you very much for your help.",
	"She bought three apples and two oranges.",
	"The children are playing in the garden.",
}

func TestTranscribesFliteSentencesWordForWord(t *testing.T) {
	t.Parallel()
	requireEngine(t)
	a := newAdapter(t, nil)
	errs, words := 0, 0
	for _, s := range sentences {
		res, err := transcribe(t, a, speak(t, 0.5, s), `{"language":"en","include_usage":true}`)
		require.NoError(t, err)
		e, n := mediatest.WordErrors(s, res.Text)
		t.Logf("%q -> %q (%d/%d)", s, res.Text, e, n)
		errs, words = errs+e, words+n
		require.Equal(t, "en", res.Language)
		require.Equal(t, "json", res.Format)
		require.NotEmpty(t, res.Segments, "timestamps by default")
		previousEnd := 0.0
		for _, seg := range res.Segments {
			require.Less(t, seg.Start, seg.End)
			require.LessOrEqual(t, seg.End, res.Duration+0.1)
			require.NotNil(t, seg.Confidence)
			require.Greater(t, *seg.Confidence, 0.0)
			require.LessOrEqual(t, *seg.Confidence, 1.0)
			requireTimedWords(t, seg, previousEnd)
			previousEnd = seg.End
		}
		require.NotNil(t, res.Usage)
		require.InDelta(t, 0.006*res.Duration/60, *res.Usage.Cost, 1e-6, "priced by the second of audio")
	}
	wer := float64(errs) / float64(words)
	t.Logf("word error rate %.1f%% (%d of %d words)", 100*wer, errs, words)
	require.Less(t, wer, 0.25)
}

// requireTimedWords: seg's words are its text, word for word, in order,
// each after the one before (and after notBefore), within the segment,
// with a confidence.
func requireTimedWords(t *testing.T, seg jobs.Segment, notBefore float64) {
	t.Helper()
	require.NotEmpty(t, seg.Words, "%+v", seg)
	texts := make([]string, len(seg.Words))
	for i, w := range seg.Words {
		texts[i] = w.Text
		require.GreaterOrEqual(t, w.Start, notBefore, "%+v", seg.Words)
		require.LessOrEqual(t, w.Start, w.End, "%+v", seg.Words)
		require.GreaterOrEqual(t, w.Start, seg.Start, "%+v", seg)
		require.LessOrEqual(t, w.End, seg.End, "%+v", seg)
		require.NotNil(t, w.Confidence)
		require.GreaterOrEqual(t, *w.Confidence, 0.0)
		require.LessOrEqual(t, *w.Confidence, 1.0)
		notBefore = w.End
	}
	require.Equal(t, seg.Text, strings.Join(texts, " "), "no fillers, no pronunciation variants")
	require.NotContains(t, seg.Text, "<")
	require.NotContains(t, seg.Text, "(")
}

func TestTwoSentencesWithAPauseAreTwoSegments(t *testing.T) {
	t.Parallel()
	requireEngine(t)
	first, second := "Thank you very much for your help.", "Please call me tomorrow morning."
	path := speak(t, 1.5, first, second)
	res, err := transcribe(t, newAdapter(t, nil), path, `{"language":"en-US","format":"srt"}`)
	require.NoError(t, err)
	require.Equal(t, "srt", res.Format)
	require.Len(t, res.Segments, 2, "%+v", res.Segments)
	require.GreaterOrEqual(t, res.Segments[1].Start-res.Segments[0].End, 1.0, "the pause lies between them")
	requireTimedWords(t, res.Segments[0], 0)
	requireTimedWords(t, res.Segments[1], res.Segments[0].End)
	e1, n1 := mediatest.WordErrors(first, res.Segments[0].Text)
	e2, n2 := mediatest.WordErrors(second, res.Segments[1].Text)
	require.Less(t, float64(e1+e2)/float64(n1+n2), 0.25, "%+v", res.Segments)

	// The SubRip rendering comes out of the same segments.
	srt, err := (&jobs.Transcription{Options: jobs.TranscriptionOptions{Format: "srt"}}).Render(jobs.MediaSRT, mustJSON(t, res))
	require.NoError(t, err)
	require.Contains(t, string(srt), "1\n00:00:0")
	require.Contains(t, string(srt), "\n2\n00:00:0")
	require.Contains(t, string(srt), res.Segments[1].Text)

	// Without timestamps: the text alone.
	res, err = transcribe(t, newAdapter(t, nil), path, `{"language":"en","timestamps":false}`)
	require.NoError(t, err)
	require.Empty(t, res.Segments)
	require.Contains(t, res.Text, "help")
	require.NotContains(t, string(mustJSON(t, res)), `"words"`)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestSilenceIsAnEmptyTranscript(t *testing.T) {
	t.Parallel()
	requireEngine(t)
	path := silence(t, t.TempDir(), 5)
	res, err := transcribe(t, newAdapter(t, nil), path, `{"language":"en"}`)
	require.NoError(t, err)
	require.Empty(t, res.Text)
	require.Empty(t, res.Segments)
	require.InDelta(t, 5, res.Duration, 0.1)
}

// A file that is no WAV is the job's input error; a WAV that is not
// 16 kHz mono is the gateway's mismatch (its media stage writes 16 kHz
// mono), permanent for this provider: another may read it.
func TestUnreadableAudioIsTheJobsInputErrorAndAnotherFormatFailsOver(t *testing.T) {
	t.Parallel()
	a := fakeAdapter(t, "/bin/true")
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.wav")
	require.NoError(t, os.WriteFile(text, []byte("these are not samples"), 0o600))
	_, err := transcribe(t, a, text, `{"language":"en"}`)
	var pe *providers.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, providers.KindInput, pe.Kind)
	require.Equal(t, jobs.CodeAudioUnreadable, pe.Code)

	stereo := filepath.Join(dir, "stereo.wav")
	require.NoError(t, os.WriteFile(stereo, wavBytes(44100, 2, make([]int16, 100)), 0o600))
	_, err = transcribe(t, a, stereo, `{"language":"en"}`)
	require.ErrorAs(t, err, &pe)
	require.Equal(t, providers.KindPermanent, pe.Kind)
	require.Equal(t, jobs.CodeUnsupportedInput, pe.Code)
	require.Contains(t, pe.Message, "2 channels, 44100 Hz")
}

func TestOtherLanguagesAndDiarizationAreRefused(t *testing.T) {
	t.Parallel()
	a := fakeAdapter(t, "/bin/true")
	path := filepath.Join(t.TempDir(), "a.wav")
	require.NoError(t, os.WriteFile(path, wavBytes(sampleRate, 1, make([]int16, 100)), 0o600))
	for _, options := range []string{`{"language":"de"}`, `{"language":"en","diarization":true}`} {
		_, err := transcribe(t, a, path, options)
		var pe *providers.Error
		require.ErrorAs(t, err, &pe, options)
		require.Equal(t, providers.KindPermanent, pe.Kind, options)
		require.Equal(t, jobs.CodeUnsupportedOption, pe.Code, options)
	}
}

// A recognizer or a model uninstalled since start-up is a permanent
// provider error saying what is gone: the job fails over.
func TestARecognizerOrModelGoneIsAClassifiedProviderError(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.wav")
	require.NoError(t, os.WriteFile(path, wavBytes(sampleRate, 1, make([]int16, 100)), 0o600))
	noBinary := fakeAdapter(t, filepath.Join(t.TempDir(), Recognizer))
	noModel := fakeAdapter(t, "/bin/true")
	require.NoError(t, os.Remove(noModel.model.lm))
	for _, c := range []struct {
		a    *Adapter
		gone string
	}{{noBinary, noBinary.bin}, {noModel, noModel.model.lm}} {
		_, err := transcribe(t, c.a, path, `{"language":"en"}`)
		var pe *providers.Error
		require.ErrorAs(t, err, &pe, c.gone)
		require.Equal(t, providers.KindPermanent, pe.Kind)
		require.Equal(t, jobs.CodeProviderRejected, pe.Code)
		require.Contains(t, pe.Message, c.gone+" is no longer installed")
		require.Contains(t, pe.Message, "make engines")
	}

	// New says what is missing.
	_, err := New(testProvider(map[string]any{"model_dir": t.TempDir()}))
	require.Error(t, err)
	require.Contains(t, err.Error(), "make engines")
}

// max_chunk_seconds is bounded at start-up: the cut-point search reads
// half a chunk into memory.
func TestMaxChunkSecondsIsBounded(t *testing.T) {
	t.Parallel()
	for _, seconds := range []float64{1, 121, 3600} {
		_, err := New(testProvider(map[string]any{"max_chunk_seconds": seconds}))
		require.Error(t, err, seconds)
		require.Contains(t, err.Error(), "max_chunk_seconds")
		require.Contains(t, err.Error(), "from 2 to 120")
	}
}

// Cancel kills the recognizer's whole process group: a fake recognizer
// that starts a child and hangs leaves neither behind.
func TestCancelKillsTheRecognizerAndItsChildren(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	fake := filepath.Join(dir, Recognizer)
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\nsleep 300 &\necho $! > "+pidFile+"\nwait\n"), 0o700))
	a := fakeAdapter(t, fake)
	path := filepath.Join(dir, "a.wav")
	require.NoError(t, os.WriteFile(path, wavBytes(sampleRate, 1, make([]int16, sampleRate)), 0o600))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(ctx, providers.Call{Service: jobs.Transcriptions, Provider: a.provider,
			Input: json.RawMessage(`{"type":"audio","url":"https://example.com/a.wav"}`), Media: mediaOf(t, path)})
		done <- err
	}()
	var child int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && child > 0
	}, 10*time.Second, 20*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	require.Eventually(t, func() bool {
		return errors.Is(syscall.Kill(child, 0), syscall.ESRCH)
	}, 5*time.Second, 20*time.Millisecond, "the recognizer's child %d still runs", child)
}

func TestParseKeepsWordsAndTheirTimes(t *testing.T) {
	t.Parallel()
	out := `the quick brown
<s> 0.140 0.230 1.000100
the 0.240 0.310 0.664615
<sil> 0.320 0.400 0.9
quick(2) 0.410 0.620 0.331699
[NOISE] 0.630 0.700 0.5
</s> 0.790 0.820 1.000000
brown
<s> 4.100 4.180 0.999600
brown 4.190 4.500 0.902116
</s> 4.510 4.600 1.000000
`
	utterances := parse(strings.NewReader(out), 30)
	require.Equal(t, [][]word{
		{{"the", 30.24, 30.31, 0.664615}, {"quick", 30.41, 30.62, 0.331699}},
		{{"brown", 34.19, 34.5, 0.902116}},
	}, utterances)
	segs := segments(utterances)
	require.Len(t, segs, 2)
	require.Equal(t, "the quick", segs[0].Text)
	require.InDelta(t, 0.498, *segs[0].Confidence, 0.001)
	require.Equal(t, 34.19, segs[1].Start)
	confidences := []float64{0.665, 0.332, 0.902}
	require.Equal(t, []jobs.Word{
		{Start: 30.24, End: 30.31, Text: "the", Confidence: &confidences[0]},
		{Start: 30.41, End: 30.62, Text: "quick", Confidence: &confidences[1]},
	}, segs[0].Words, "fillers left out, quick(2) is quick")
	require.Equal(t, []jobs.Word{{Start: 34.19, End: 34.5, Text: "brown", Confidence: &confidences[2]}}, segs[1].Words)
}

func TestLongUtterancesAreSplitIntoSubtitleSizedSegments(t *testing.T) {
	t.Parallel()
	var u []word
	for i := range 20 {
		u = append(u, word{text: "w" + strconv.Itoa(i), start: float64(i), end: float64(i) + 0.8, confidence: 1})
	}
	segs := segments([][]word{u})
	require.Len(t, segs, 3)
	for _, s := range segs {
		require.LessOrEqual(t, s.End-s.Start, float64(maxSegmentSeconds))
	}
	require.Equal(t, 0.0, segs[0].Start)
	require.Equal(t, 19.8, segs[2].End)
}

// A chunk ends in the pause of its second half, not at its longest length.
func TestChunksEndAtTheQuietestPoint(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	samples := make([]int16, 70*sampleRate)
	for i := range samples {
		second := float64(i) / sampleRate
		if second >= 22 && second < 22.6 {
			continue // a pause
		}
		samples[i] = int16(rng.IntN(8000) - 4000)
	}
	path := filepath.Join(t.TempDir(), "noise.wav")
	require.NoError(t, os.WriteFile(path, wavBytes(sampleRate, 1, samples), 0o600))
	p, err := openPCM(path)
	require.NoError(t, err)
	defer p.Close()
	require.EqualValues(t, len(samples), p.samples)

	cut, err := p.nextCut(0, 30*sampleRate)
	require.NoError(t, err)
	require.InDelta(t, 22.3, seconds(cut), 0.16, "in the pause")
	next, err := p.nextCut(cut, 30*sampleRate)
	require.NoError(t, err)
	require.Greater(t, seconds(next), seconds(cut)+15, "no pause: somewhere in the second half")
	require.LessOrEqual(t, seconds(next), seconds(cut)+30)
	last, err := p.nextCut(60*sampleRate, 30*sampleRate)
	require.NoError(t, err)
	require.EqualValues(t, len(samples), last, "the rest fits")
}

// wavBytes is a PCM WAV file with a LIST chunk before its data, as
// ffmpeg writes them.
func wavBytes(rate, channels int, samples []int16) []byte {
	le := binary.LittleEndian
	list := []byte("LIST\x0e\x00\x00\x00INFOISFT\x02\x00\x00\x00x\x00")
	data := make([]byte, 2*len(samples))
	for i, s := range samples {
		le.PutUint16(data[2*i:], uint16(s))
	}
	var b []byte
	b = append(b, "RIFF"...)
	b = le.AppendUint32(b, uint32(4+24+len(list)+8+len(data)))
	b = append(b, "WAVEfmt "...)
	b = le.AppendUint32(b, 16)
	b = le.AppendUint16(b, 1)
	b = le.AppendUint16(b, uint16(channels))
	b = le.AppendUint32(b, uint32(rate))
	b = le.AppendUint32(b, uint32(rate*channels*2))
	b = le.AppendUint16(b, uint16(channels*2))
	b = le.AppendUint16(b, 16)
	b = append(b, list...)
	b = append(b, "data"...)
	b = le.AppendUint32(b, uint32(len(data)))
	return append(b, data...)
}

// Each chunk's recognizer starts from the cepstral mean the one before
// ended with, as one process over the whole audio would; a recognizer
// that fails is a retryable provider error quoting its log.
func TestChunksCarryTheCepstralMeanAndFailuresQuoteTheLog(t *testing.T) {
	t.Parallel()
	a, calls := fakeRecognizer(t, `echo "INFO: cmn_live.c(120): Update from < 41.00 -5.29 >" >&2
echo "INFO: cmn_live.c(138): Update to   < 54.16 15.36 >" >&2
echo "hello"
echo "<s> 0.100 0.200 1.0"
echo "hello 0.210 0.600 0.9"
echo "</s> 0.610 0.700 1.0"
`)
	path := silentWAV(t, 70)
	res, err := transcribe(t, a, path, `{"language":"en"}`)
	require.NoError(t, err)
	lines := calls()
	require.Len(t, lines, 3, "70 s in chunks of at most 30 s")
	require.NotContains(t, lines[0], "-cmninit")
	require.Contains(t, lines[1], "-cmninit 54.16,15.36")
	require.Contains(t, lines[2], "-cmninit 54.16,15.36")
	require.Len(t, res.Segments, 3)
	require.Greater(t, res.Segments[1].Start, 15.0, "shifted by the chunk's start")
	require.Equal(t, "hello hello hello", res.Text)

	require.NoError(t, os.WriteFile(a.bin, []byte("#!/bin/sh\necho 'INFO: starting' >&2\necho 'FATAL: \"acmod.c\", line 83: Acoustic model definition is not specified' >&2\necho 'INFO: bye' >&2\nexit 1\n"), 0o700))
	_, err = transcribe(t, a, path, `{"language":"en"}`)
	var pe *providers.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, providers.KindRetryable, pe.Kind)
	require.Equal(t, jobs.CodeProviderUnavailable, pe.Code)
	require.Contains(t, pe.Message, "Acoustic model definition is not specified")
}

// A chunk with no speech reports no cepstral mean: the next chunk starts
// from the last one reported, not from the model's.
func TestASilentChunkKeepsTheCepstralMean(t *testing.T) {
	t.Parallel()
	a, calls := fakeRecognizer(t, `n=$(grep -c . "$(dirname "$0")/calls")
if [ "$n" -ne 2 ]; then
  echo "INFO: cmn_live.c(138): Update to   < 5$n.00 1.50 >" >&2
fi
`)
	_, err := transcribe(t, a, silentWAV(t, 70), `{"language":"en"}`)
	require.NoError(t, err)
	lines := calls()
	require.Len(t, lines, 3)
	require.NotContains(t, lines[0], "-cmninit")
	require.Contains(t, lines[1], "-cmninit 51.00,1.50")
	require.Contains(t, lines[2], "-cmninit 51.00,1.50", "the second chunk heard no speech")
}

// A recognizer that hangs is stopped after its chunk's timeout, a
// retryable provider error that says so, long before the activity's
// limit.
func TestAHungRecognizerTimesOut(t *testing.T) {
	t.Parallel()
	a, _ := fakeRecognizer(t, "sleep 300\n")
	a.timeoutFloor = 300 * time.Millisecond
	path := filepath.Join(t.TempDir(), "a.wav")
	require.NoError(t, os.WriteFile(path, wavBytes(sampleRate, 1, make([]int16, sampleRate/100)), 0o600))
	started := time.Now()
	_, err := transcribe(t, a, path, `{"language":"en"}`)
	require.Less(t, time.Since(started), 10*time.Second, "the process group is killed, sleep and all")
	var pe *providers.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, providers.KindRetryable, pe.Kind)
	require.Equal(t, jobs.CodeProviderUnavailable, pe.Code)
	require.Contains(t, pe.Message, "no result within 300ms")
	require.Equal(t, time.Minute, (&Adapter{}).chunkTimeout(1), "a minute at least")
	require.Equal(t, 150*time.Second, (&Adapter{}).chunkTimeout(30), "5 times a chunk's audio")
}
