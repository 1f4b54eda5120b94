package jobs

import (
	"fmt"
	"math"
	"strings"

	"github.com/ai-job-gateway/gateway/providers"
)

// renderSRT writes a transcript as SubRip: numbered cues, comma before the
// milliseconds, a blank line after each cue.
func renderSRT(r providers.TranscriptionResult) string {
	var b strings.Builder
	for i, seg := range cues(r) {
		fmt.Fprintf(&b, "%d\n%s --> %s\n%s\n\n", i+1, timestamp(seg.Start, ","), timestamp(seg.End, ","), cueText(seg, false))
	}
	return b.String()
}

// renderVTT writes a transcript as WebVTT, with speakers as voice spans.
func renderVTT(r providers.TranscriptionResult) string {
	var b strings.Builder
	b.WriteString("WEBVTT\n\n")
	for i, seg := range cues(r) {
		fmt.Fprintf(&b, "%d\n%s --> %s\n%s\n\n", i+1, timestamp(seg.Start, "."), timestamp(seg.End, "."), cueText(seg, true))
	}
	return b.String()
}

// cues are the segments to render; a transcript without timestamps is one
// cue over its whole duration.
func cues(r providers.TranscriptionResult) []providers.Segment {
	if len(r.Segments) > 0 || r.Text == "" {
		return r.Segments
	}
	return []providers.Segment{{Start: 0, End: r.Duration, Text: r.Text}}
}

func cueText(seg providers.Segment, vtt bool) string {
	// A blank line ends a cue in both formats, so drop blank lines (however
	// many follow each other).
	var lines []string
	for _, line := range strings.Split(strings.ReplaceAll(seg.Text, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) != "" {
			lines = append(lines, line)
		}
	}
	text := strings.TrimSpace(strings.Join(lines, "\n"))
	if vtt {
		text = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(text)
		text = strings.ReplaceAll(text, "-->", "--&gt;")
		if seg.Speaker != "" {
			return "<v " + seg.Speaker + ">" + text
		}
		return text
	}
	if seg.Speaker != "" {
		return seg.Speaker + ": " + text
	}
	return text
}

// timestamp formats seconds as HH:MM:SS<sep>mmm.
func timestamp(seconds float64, sep string) string {
	ms := int64(math.Round(math.Max(seconds, 0) * 1000))
	return fmt.Sprintf("%02d:%02d:%02d%s%03d", ms/3_600_000, ms/60_000%60, ms/1000%60, sep, ms%1000)
}
