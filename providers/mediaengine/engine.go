package mediaengine

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/providers"
)

// ptsTime finds the time of a frame in ffmpeg's showinfo lines.
var ptsTime = regexp.MustCompile(`pts_time:\s*([0-9.]+)`)

// sceneCuts runs ffmpeg's scene detection and returns the times at which
// a new scene starts.
func (a *Adapter) sceneCuts(ctx context.Context, path string) ([]float64, error) {
	args := append([]string{"-nostdin", "-hide_banner", "-loglevel", "info"}, media.InputArgs(path)...)
	args = append(args, "-an", "-sn", "-dn",
		"-vf", fmt.Sprintf("select='gt(scene,%g)',showinfo", a.settings.SceneThreshold), "-f", "null", "-")
	stderr, err := a.run(ctx, a.tools.FFmpeg, args...)
	if err != nil {
		return nil, err
	}
	var cuts []float64
	scanner := bufio.NewScanner(bytes.NewReader(stderr))
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.Contains(line, "Parsed_showinfo") {
			continue
		}
		if m := ptsTime.FindStringSubmatch(line); m != nil {
			if t, err := strconv.ParseFloat(m[1], 64); err == nil {
				cuts = append(cuts, t)
			}
		}
	}
	sort.Float64s(cuts)
	return cuts, nil
}

// readText samples a frame every OCREverySeconds, reads its text with
// tesseract, and merges text seen on consecutive frames into one
// detection with the stretch it was on screen.
func (a *Adapter) readText(ctx context.Context, path string, duration, threshold float64, progress func(int)) ([]jobs.TextDetection, error) {
	dir, err := os.MkdirTemp("", "media-ocr-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	every := a.settings.OCREverySeconds
	args := append([]string{"-nostdin", "-hide_banner", "-loglevel", "error"}, media.InputArgs(path)...)
	// A frame at the middle of each interval: fps=1/every samples one per
	// interval, starting at 0.
	args = append(args, "-an", "-sn", "-dn", "-vf", fmt.Sprintf("fps=1/%g", every), filepath.Join(dir, "frame-%06d.png"))
	if _, err := a.run(ctx, a.tools.FFmpeg, args...); err != nil {
		return nil, err
	}
	frames, err := filepath.Glob(filepath.Join(dir, "frame-*.png"))
	if err != nil {
		return nil, err
	}
	sort.Strings(frames)
	var out []jobs.TextDetection
	open := map[string]int{} // text -> index in out, while it stays on screen
	for i, frame := range frames {
		at := float64(i) * every
		end := min(at+every, max(duration, at))
		lines, err := a.ocr(ctx, frame)
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		for _, l := range lines {
			if l.confidence < threshold {
				continue
			}
			seen[l.text] = true
			if j, ok := open[l.text]; ok {
				inst := &out[j].Instances[len(out[j].Instances)-1]
				inst.End = round(end)
				inst.Confidence = max(inst.Confidence, l.confidence)
				out[j].Confidence = max(out[j].Confidence, l.confidence)
				continue
			}
			open[l.text] = len(out)
			out = append(out, jobs.TextDetection{
				Text: l.text, Confidence: l.confidence, Language: a.language(),
				Instances: []jobs.TimedInstance{{Start: round(at), End: round(end), Confidence: l.confidence}},
			})
		}
		for text := range open {
			if !seen[text] {
				delete(open, text)
			}
		}
		progress(30 + 70*(i+1)/max(len(frames), 1))
	}
	return out, nil
}

// language is the result's language of OCR text: tesseract's first
// language as a two-letter code when it has one.
func (a *Adapter) language() string {
	first, _, _ := strings.Cut(a.settings.OCRLanguages, "+")
	if code, ok := iso639_1[first]; ok {
		return code
	}
	return first
}

var iso639_1 = map[string]string{"eng": "en", "deu": "de", "fra": "fr", "spa": "es", "ita": "it", "por": "pt", "nld": "nl"}

// textLine is a line of text tesseract read, with its mean word
// confidence (0..1).
type textLine struct {
	text       string
	confidence float64
}

// ocr reads the lines of text on one frame from tesseract's TSV output:
// one row per word, with its block, paragraph and line numbers and a
// confidence of 0..100 (-1 for rows that are not words).
func (a *Adapter) ocr(ctx context.Context, frame string) ([]textLine, error) {
	cmd := exec.CommandContext(ctx, a.tesseract, frame, "stdout", "-l", a.settings.OCRLanguages, "tsv")
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, providers.Retryable(jobs.CodeProviderUnavailable, "media: tesseract failed: "+media.ErrorLine(stderr.String()), err)
	}
	type lineKey struct{ block, par, line string }
	var order []lineKey
	words := map[lineKey][]string{}
	confs := map[lineKey][]float64{}
	scanner := bufio.NewScanner(&stdout)
	for scanner.Scan() {
		f := strings.Split(scanner.Text(), "\t")
		if len(f) < 12 || f[0] != "5" { // level 5: a word
			continue
		}
		conf, err := strconv.ParseFloat(f[10], 64)
		text := strings.TrimSpace(f[11])
		if err != nil || conf < 0 || text == "" {
			continue
		}
		k := lineKey{f[2], f[3], f[4]}
		if _, ok := words[k]; !ok {
			order = append(order, k)
		}
		words[k] = append(words[k], text)
		confs[k] = append(confs[k], conf/100)
	}
	var lines []textLine
	for _, k := range order {
		sum := 0.0
		for _, c := range confs[k] {
			sum += c
		}
		lines = append(lines, textLine{text: strings.Join(words[k], " "), confidence: round(sum / float64(len(confs[k])))})
	}
	return lines, nil
}

// run runs a media program on the job's video and returns its error
// output; a failure is the video's (unreadable) unless ctx ended.
func (a *Adapter) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, providers.InputError(jobs.CodeInputUnreadable, "media: the video cannot be decoded: "+media.ErrorLine(stderr.String()), nil)
	}
	return stderr.Bytes(), nil
}
