package jobs

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// renderedCue is a cue as a reader of the rendered file sees it.
type renderedCue struct {
	start, end int64 // milliseconds
	voice      string
	text       string
}

var (
	srtTiming = regexp.MustCompile(`^(\d{2,}):([0-5]\d):([0-5]\d),(\d{3}) --> (\d{2,}):([0-5]\d):([0-5]\d),(\d{3})$`)
	vttTiming = regexp.MustCompile(`^(\d{2,}):([0-5]\d):([0-5]\d)\.(\d{3}) --> (\d{2,}):([0-5]\d):([0-5]\d)\.(\d{3})$`)
)

// blocks splits a file into its blocks of lines, as both formats do: at
// blank lines, any of CR LF, CR or LF ending a line (WebVTT's rule).
func blocks(t *testing.T, out string) [][]string {
	t.Helper()
	lines := strings.Split(strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(out), "\n")
	var all [][]string
	var block []string
	for _, line := range lines {
		if strings.TrimSpace(line) == "" {
			if block != nil {
				all = append(all, block)
			}
			block = nil
			continue
		}
		block = append(block, line)
	}
	if block != nil {
		t.Fatalf("the file does not end with a blank line: %q", out)
	}
	return all
}

func timing(t *testing.T, re *regexp.Regexp, line string) (int64, int64) {
	t.Helper()
	m := re.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("not a timing line: %q", line)
	}
	ms := func(h, m, s, frac string) int64 {
		n := func(v string) int64 { x, _ := strconv.ParseInt(v, 10, 64); return x }
		return ((n(h)*60+n(m))*60+n(s))*1000 + n(frac)
	}
	return ms(m[1], m[2], m[3], m[4]), ms(m[5], m[6], m[7], m[8])
}

// readSRT reads SubRip as a strict reader does: index, timing line, then
// text lines up to a blank line; any line holding --> is taken for a
// timing line, as lenient readers do.
func readSRT(t *testing.T, out string) []renderedCue {
	t.Helper()
	var cues []renderedCue
	for i, b := range blocks(t, out) {
		if len(b) < 2 || b[0] != strconv.Itoa(i+1) {
			t.Fatalf("cue %d does not start with its number and timing: %q", i+1, b)
		}
		start, end := timing(t, srtTiming, b[1])
		for _, line := range b[2:] {
			if strings.Contains(line, "-->") {
				t.Fatalf("cue %d holds a timing arrow in its text: %q", i+1, line)
			}
		}
		cues = append(cues, renderedCue{start: start, end: end, text: strings.Join(b[2:], "\n")})
	}
	return cues
}

var vttEntities = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">")

// readVTT reads WebVTT: an optional identifier, the timing line, text
// lines up to a blank line (a line holding --> would start the next cue),
// then the cue text: an optional voice span <v annotation> first, no other
// tag, and only the &amp; &lt; &gt; references the renderer writes.
func readVTT(t *testing.T, out string) []renderedCue {
	t.Helper()
	all := blocks(t, out)
	if len(all) == 0 || len(all[0]) != 1 || all[0][0] != "WEBVTT" {
		t.Fatalf("no WEBVTT header: %q", out)
	}
	var cues []renderedCue
	for i, b := range all[1:] {
		if len(b) < 2 || strings.Contains(b[0], "-->") {
			t.Fatalf("cue %d does not start with an identifier and timing: %q", i+1, b)
		}
		start, end := timing(t, vttTiming, b[1])
		for _, line := range b[2:] {
			if strings.Contains(line, "-->") {
				t.Fatalf("cue %d holds a timing arrow in its text: %q", i+1, line)
			}
		}
		c := renderedCue{start: start, end: end}
		text := strings.Join(b[2:], "\n")
		if rest, ok := strings.CutPrefix(text, "<v "); ok {
			annotation, after, found := strings.Cut(rest, ">")
			if !found || strings.ContainsAny(annotation, "<\n") {
				t.Fatalf("cue %d: broken voice span: %q", i+1, text)
			}
			c.voice, text = annotation, after
		}
		for _, s := range []string{text, c.voice} {
			if strings.ContainsAny(s, "<>") {
				t.Fatalf("cue %d: a tag or a stray > in the text: %q", i+1, b[2:])
			}
			if strings.Count(s, "&") != strings.Count(s, "&amp;")+strings.Count(s, "&lt;")+strings.Count(s, "&gt;") {
				t.Fatalf("cue %d: a character reference the renderer did not write: %q", i+1, b[2:])
			}
		}
		c.voice, c.text = vttEntities.Replace(c.voice), vttEntities.Replace(text)
		cues = append(cues, c)
	}
	return cues
}

// squeeze drops what rendering may drop: white space (blank lines, the
// ends of lines) and, for SRT, the hyphens of a defused arrow.
func squeeze(s string, hyphens bool) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || (hyphens && r == '-') {
			return -1
		}
		return r
	}, s)
}

// wantMS is where a time in seconds lands: rounded to the millisecond,
// never negative, at most 99:59:59.999.
func wantMS(t *testing.T, seconds float64, got int64) {
	t.Helper()
	const maxMS = 99*3_600_000 + 59*60_000 + 59_999
	switch {
	case math.IsNaN(seconds) || seconds <= 0:
		if got != 0 {
			t.Fatalf("%v s rendered as %d ms, want 0", seconds, got)
		}
	case seconds*1000 >= maxMS:
		if got != maxMS {
			t.Fatalf("%v s rendered as %d ms, want the maximum %d", seconds, got, maxMS)
		}
	default:
		if diff := math.Abs(float64(got) - seconds*1000); diff > 0.5000001 {
			t.Fatalf("%v s rendered as %d ms", seconds, got)
		}
	}
}

// FuzzRender renders a segment with any text, speaker and times, followed
// by a plain one, and reads both files back: still two cues, with the
// right times, and the text and speaker intact but for white space (and
// hyphens of an arrow in SRT), with no tag or timing line made of them.
func FuzzRender(f *testing.F) {
	f.Fuzz(func(t *testing.T, text, speaker string, start, end float64) {
		r := TranscriptionResult{Segments: []Segment{
			{Start: start, End: end, Text: text, Speaker: speaker},
			{Start: 1, End: 2, Text: "next"},
		}}
		spk := squeeze(speaker, false)

		srt := readSRT(t, renderSRT(r))
		if len(srt) != 2 {
			t.Fatalf("SRT has %d cues, want 2: %q", len(srt), renderSRT(r))
		}
		wantMS(t, start, srt[0].start)
		wantMS(t, end, srt[0].end)
		want := squeeze(text, true)
		if spk != "" {
			want = squeeze(speaker, true) + ":" + want
		}
		if got := squeeze(srt[0].text, true); got != want {
			t.Fatalf("SRT text %q, want %q", srt[0].text, want)
		}
		if srt[1] != (renderedCue{start: 1000, end: 2000, text: "next"}) {
			t.Fatalf("SRT second cue %+v", srt[1])
		}

		vtt := readVTT(t, renderVTT(r))
		if len(vtt) != 2 {
			t.Fatalf("WebVTT has %d cues, want 2: %q", len(vtt), renderVTT(r))
		}
		wantMS(t, start, vtt[0].start)
		wantMS(t, end, vtt[0].end)
		if got := squeeze(vtt[0].voice, false); got != spk {
			t.Fatalf("WebVTT voice %q, want %q", vtt[0].voice, speaker)
		}
		if got := squeeze(vtt[0].text, false); got != squeeze(text, false) {
			t.Fatalf("WebVTT text %q, want %q", vtt[0].text, text)
		}
		if vtt[1] != (renderedCue{start: 1000, end: 2000, text: "next"}) {
			t.Fatalf("WebVTT second cue %+v", vtt[1])
		}
	})
}
