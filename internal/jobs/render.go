package jobs

import (
	"fmt"
	"math"
	"strings"
)

// renderSRT writes a transcript as SubRip: numbered cues, comma before the
// milliseconds, a blank line after each cue.
func renderSRT(r TranscriptionResult) string {
	var b strings.Builder
	for i, seg := range cues(r) {
		fmt.Fprintf(&b, "%d\n%s --> %s\n%s\n\n", i+1, timestamp(seg.Start, ","), timestamp(seg.End, ","), cueText(seg, false))
	}
	return b.String()
}

// renderVTT writes a transcript as WebVTT, with speakers as voice spans.
func renderVTT(r TranscriptionResult) string {
	var b strings.Builder
	b.WriteString("WEBVTT\n\n")
	for i, seg := range cues(r) {
		fmt.Fprintf(&b, "%d\n%s --> %s\n%s\n\n", i+1, timestamp(seg.Start, "."), timestamp(seg.End, "."), cueText(seg, true))
	}
	return b.String()
}

// cues are the segments to render; a transcript without timestamps is one
// cue over its whole duration.
func cues(r TranscriptionResult) []Segment {
	if len(r.Segments) > 0 || r.Text == "" {
		return r.Segments
	}
	return []Segment{{Start: 0, End: r.Duration, Text: r.Text}}
}

// cueText is a cue's payload. Provider text is untrusted as far as the
// file's structure goes: a blank line would end the cue, a line holding
// --> would start a new one (WebVTT readers and lenient SRT readers take
// such a line for timing), and in WebVTT a < or & would start a tag or a
// character reference.
func cueText(seg Segment, vtt bool) string {
	// Drop blank lines, however many follow each other; CR alone ends a
	// line in WebVTT too.
	var lines []string
	for _, line := range strings.Split(lineBreaks.Replace(seg.Text), "\n") {
		if strings.TrimSpace(line) != "" {
			lines = append(lines, line)
		}
	}
	text := strings.TrimSpace(strings.Join(lines, "\n"))
	// A speaker is a name on one line.
	speaker := strings.Join(strings.Fields(seg.Speaker), " ")
	if vtt {
		// Escaping > also breaks every -->.
		text = vttEscaper.Replace(text)
		if speaker == "" {
			return text
		}
		// Readers strip the space that keeps a speaker's trailing
		// hyphens from making --> with the closing >.
		speaker = vttEscaper.Replace(speaker)
		if strings.HasSuffix(speaker, "-") {
			speaker += " "
		}
		return "<v " + speaker + ">" + text
	}
	// SubRip has no escapes: shorten each arrow to ->. Its informal tags
	// (<i>, <b>) are left as the provider wrote them.
	text, speaker = noArrows(text), noArrows(speaker)
	if speaker != "" {
		return speaker + ": " + text
	}
	return text
}

var (
	lineBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n")
	vttEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
)

// noArrows shortens every run of hyphens before a > to one hyphen, so no
// --> is left.
func noArrows(s string) string {
	if !strings.Contains(s, "-->") {
		return s
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '>' {
			for n := len(out); n >= 2 && out[n-1] == '-' && out[n-2] == '-'; n-- {
				out = out[:n-1]
			}
		}
		out = append(out, s[i])
	}
	return string(out)
}

// maxTimestamp is 99:59:59.999, the largest time both formats' two-digit
// hours hold.
const maxTimestamp = 99*3600 + 59*60 + 59.999

// timestamp formats seconds as HH:MM:SS<sep>mmm, within 0 and
// maxTimestamp (NaN gives 0).
func timestamp(seconds float64, sep string) string {
	if !(seconds > 0) {
		seconds = 0
	}
	ms := int64(math.Round(min(seconds, maxTimestamp) * 1000))
	return fmt.Sprintf("%02d:%02d:%02d%s%03d", ms/3_600_000, ms/60_000%60, ms/1000%60, sep, ms%1000)
}
