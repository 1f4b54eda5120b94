package sphinx

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// word is one recognized word with its times (seconds from the start of
// the audio) and its posterior probability.
type word struct {
	text       string
	start, end float64
	confidence float64
}

// defaultTimeoutFloor is the least time a chunk's recognizer is given;
// a chunk of more than 12 s of audio is given 5 times its length (it
// takes about 0.1 of it: docs/benchmarks.md, Local transcription).
const defaultTimeoutFloor = time.Minute

// chunkTimeout bounds one recognizer process on audio seconds of audio,
// so a hung one fails the call long before the activity's limit.
func (a *Adapter) chunkTimeout(audio float64) time.Duration {
	floor := a.timeoutFloor
	if floor == 0 {
		floor = defaultTimeoutFloor
	}
	return max(floor, time.Duration(5*audio*float64(time.Second)))
}

// recognize runs one recognizer process on length seconds of raw samples
// and returns its utterances (each a run of speech between pauses), their
// times shifted by offset seconds. The process reads the samples from its
// stdin; it is killed with its process group when ctx ends or it runs
// past its chunkTimeout. cmn is where the recognizer's cepstral mean
// starts (empty: the model's); the one it ends with is returned (empty
// when it heard no speech), for the next chunk to start from, as a
// single process over the whole audio would.
func (a *Adapter) recognize(ctx context.Context, samples io.Reader, offset, length float64, cmn string) ([][]word, string, error) {
	args := []string{"-infile", "/dev/stdin", // not *.wav: raw samples, no header
		"-hmm", a.model.hmm, "-lm", a.model.lm, "-dict", a.model.dict, "-samprate", strconv.Itoa(sampleRate), "-time", "yes"}
	if cmn != "" {
		args = append(args, "-cmninit", cmn)
	}
	timeout := a.chunkTimeout(length)
	chunkCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(chunkCtx, a.bin, args...)
	cmd.Stdin = samples
	var stdout bytes.Buffer
	log := &recognizerLog{}
	cmd.Stdout, cmd.Stderr = &stdout, log
	killGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, "", ctx.Err()
	}
	if chunkCtx.Err() != nil {
		return nil, "", providers.Retryable(jobs.CodeProviderUnavailable,
			fmt.Sprintf("provider %q: %s gave no result within %s for %.1f s of audio (the chunk's timeout), and was stopped",
				a.provider.ID, a.bin, timeout, length), chunkCtx.Err())
	}
	if err != nil {
		var missing *exec.Error
		if errors.As(err, &missing) {
			return nil, "", a.gone(a.bin, err)
		}
		return nil, "", providers.Retryable(jobs.CodeProviderUnavailable,
			fmt.Sprintf("provider %q: %s failed: %s", a.provider.ID, a.bin, log.failure()), err)
	}
	if a.observe != nil {
		a.observe(cmd.ProcessState)
	}
	log.flush()
	return parse(&stdout, offset), log.cmn, nil
}

// parse reads pocketsphinx_continuous's -time output: for each utterance
// a line with its hypothesis, then one line per word, "<word> <start>
// <end> <posterior>", from <s> to </s>. Fillers (silence, noise) are left
// out, and alternative pronunciations ("read(2)") lose their number.
func parse(out io.Reader, offset float64) [][]word {
	var utterances [][]word
	var current []word
	flush := func() {
		if len(current) > 0 {
			utterances = append(utterances, current)
		}
		current = nil
	}
	scanner := bufio.NewScanner(out)
	for scanner.Scan() {
		f := strings.Fields(scanner.Text())
		if len(f) != 4 {
			continue // a hypothesis line
		}
		start, err1 := strconv.ParseFloat(f[1], 64)
		end, err2 := strconv.ParseFloat(f[2], 64)
		posterior, err3 := strconv.ParseFloat(f[3], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		text := f[0]
		switch {
		case text == "<s>" || text == "</s>":
			flush()
			continue
		case strings.HasPrefix(text, "<") || strings.HasPrefix(text, "[") || strings.HasPrefix(text, "++"):
			continue // <sil>, [NOISE], ++BREATH++
		}
		if i := strings.IndexByte(text, '('); i > 0 && strings.HasSuffix(text, ")") {
			text = text[:i]
		}
		current = append(current, word{text: text, start: round(start + offset), end: round(end + offset),
			confidence: min(1, max(0, posterior))})
	}
	flush()
	return utterances
}

// maxSegmentSeconds keeps segments subtitle-sized: a longer utterance is
// split between words.
const maxSegmentSeconds = 7

// segments turns utterances into transcript segments, each with the mean
// posterior of its words as its confidence.
func segments(utterances [][]word) []jobs.Segment {
	var out []jobs.Segment
	for _, u := range utterances {
		for len(u) > 0 {
			n := 1
			for n < len(u) && u[n].end-u[0].start <= maxSegmentSeconds {
				n++
			}
			out = append(out, segment(u[:n]))
			u = u[n:]
		}
	}
	return out
}

// segment is a run of words as one segment, with its words timed
// (docs/api.md, Extensions: words).
func segment(words []word) jobs.Segment {
	texts := make([]string, len(words))
	timed := make([]jobs.Word, len(words))
	sum := 0.0
	for i, w := range words {
		texts[i] = w.text
		sum += w.confidence
		confidence := round(w.confidence)
		timed[i] = jobs.Word{Start: w.start, End: w.end, Text: w.text, Confidence: &confidence}
	}
	confidence := round(sum / float64(len(words)))
	return jobs.Segment{Start: words[0].start, End: words[len(words)-1].end, Text: strings.Join(texts, " "),
		Confidence: &confidence, Words: timed}
}

func round(s float64) float64 { return math.Round(s*1000) / 1000 }

// recognizerLog reads the recognizer's log as it is written, keeping
// only what matters: the last cepstral mean ("cmn_live.c(138): Update to
// < 54.16 15.36 ... >"), and the last error line, or the last line, to
// explain a failure.
type recognizerLog struct {
	partial   []byte
	cmn       string
	lastError string
	lastLine  string
}

func (l *recognizerLog) Write(p []byte) (int, error) {
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.line(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	if len(l.partial) > 4096 { // no line is that long; do not hold it
		l.partial = l.partial[:0]
	}
	return len(p), nil
}

func (l *recognizerLog) flush() {
	if len(l.partial) > 0 {
		l.line(string(l.partial))
		l.partial = nil
	}
}

func (l *recognizerLog) line(line string) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	l.lastLine = line
	switch {
	case strings.HasPrefix(line, "FATAL") || strings.HasPrefix(line, "ERROR"):
		l.lastError = line
	case strings.Contains(line, "Update to"):
		if _, vector, ok := strings.Cut(line, "<"); ok {
			vector, _, _ = strings.Cut(vector, ">")
			l.cmn = strings.Join(strings.Fields(vector), ",")
		}
	}
}

// failure is the log's last error line, or its last line.
func (l *recognizerLog) failure() string {
	l.flush()
	if l.lastError != "" {
		return l.lastError
	}
	return l.lastLine
}
