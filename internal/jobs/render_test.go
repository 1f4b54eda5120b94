package jobs

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTimestamp(t *testing.T) {
	t.Parallel()
	cases := []struct {
		seconds  float64
		srt, vtt string
	}{
		{0, "00:00:00,000", "00:00:00.000"},
		{0.001, "00:00:00,001", "00:00:00.001"},
		{1.5, "00:00:01,500", "00:00:01.500"},
		{59.999, "00:00:59,999", "00:00:59.999"},
		{59.9996, "00:01:00,000", "00:01:00.000"}, // rounds to the millisecond, carrying over
		{61.25, "00:01:01,250", "00:01:01.250"},
		{3599.999, "00:59:59,999", "00:59:59.999"},
		{3600, "01:00:00,000", "01:00:00.000"},
		{3661.5, "01:01:01,500", "01:01:01.500"},
		{36000.042, "10:00:00,042", "10:00:00.042"},
		{0.1 + 0.2, "00:00:00,300", "00:00:00.300"}, // float noise does not show
		{-3, "00:00:00,000", "00:00:00.000"},        // never negative
	}
	for _, tc := range cases {
		require.Equal(t, tc.srt, timestamp(tc.seconds, ","), "%v s", tc.seconds)
		require.Equal(t, tc.vtt, timestamp(tc.seconds, "."), "%v s", tc.seconds)
	}
}

func TestRenderSRT(t *testing.T) {
	t.Parallel()
	r := TranscriptionResult{Format: "srt", Duration: 3700, Segments: []Segment{
		{Start: 0, End: 2.25, Text: "First line."},
		{Start: 2.25, End: 5, Text: "  Second\nline  ", Speaker: "Anna"},
		{Start: 3600, End: 3661.5, Text: "Late <i>&</i> -->"},
	}}
	want := "1\n00:00:00,000 --> 00:00:02,250\nFirst line.\n\n" +
		"2\n00:00:02,250 --> 00:00:05,000\nAnna: Second\nline\n\n" +
		"3\n01:00:00,000 --> 01:01:01,500\nLate <i>&</i> ->\n\n"
	require.Equal(t, want, renderSRT(r))
}

func TestRenderVTT(t *testing.T) {
	t.Parallel()
	r := TranscriptionResult{Format: "vtt", Duration: 10, Segments: []Segment{
		{Start: 0.5, End: 1, Text: "a < b && c > d"},
		{Start: 1, End: 2, Text: "arrow --> inside", Speaker: "spk_0"},
		{Start: 2, End: 3661.5, Text: "&amp; stays literal"},
	}}
	want := "WEBVTT\n\n" +
		"1\n00:00:00.500 --> 00:00:01.000\na &lt; b &amp;&amp; c &gt; d\n\n" +
		"2\n00:00:01.000 --> 00:00:02.000\n<v spk_0>arrow --&gt; inside\n\n" +
		"3\n00:00:02.000 --> 01:01:01.500\n&amp;amp; stays literal\n\n"
	got := renderVTT(r)
	require.Equal(t, want, got)
	for _, cue := range strings.Split(got, "\n\n")[1:] {
		lines := strings.Split(cue, "\n")
		if len(lines) < 3 {
			continue
		}
		for _, text := range lines[2:] {
			require.NotContains(t, text, "-->", "cue text must not contain the timing arrow")
		}
	}
}

func TestRenderBlankLinesInsideCueText(t *testing.T) {
	t.Parallel()
	// A blank line ends a cue in both formats, so cue text must never
	// contain one, however many line breaks the provider put in.
	for _, text := range []string{"a\n\nb", "a\n\n\nb", "a\n\n\n\nb", "a\r\n\r\nb", "a\r\n\r\n\r\nb", "a\n \t\nb", "\n\na\n\n\nb\n\n"} {
		r := TranscriptionResult{Segments: []Segment{{Start: 0, End: 1, Text: text}}}
		require.Equal(t, "1\n00:00:00,000 --> 00:00:01,000\na\nb\n\n", renderSRT(r), "%q", text)
		require.Equal(t, "WEBVTT\n\n1\n00:00:00.000 --> 00:00:01.000\na\nb\n\n", renderVTT(r), "%q", text)
	}
}

func TestRenderWithoutSegments(t *testing.T) {
	t.Parallel()
	r := TranscriptionResult{Format: "srt", Duration: 125.5, Text: "The whole transcript."}
	require.Equal(t, "1\n00:00:00,000 --> 00:02:05,500\nThe whole transcript.\n\n", renderSRT(r))
	require.Equal(t, "WEBVTT\n\n1\n00:00:00.000 --> 00:02:05.500\nThe whole transcript.\n\n", renderVTT(r))

	empty := TranscriptionResult{Format: "vtt", Duration: 3}
	require.Equal(t, "", renderSRT(empty))
	require.Equal(t, "WEBVTT\n\n", renderVTT(empty))
}

func TestRenderKeepsProviderTextInsideItsCue(t *testing.T) {
	t.Parallel()
	r := TranscriptionResult{Segments: []Segment{
		{Start: 0, End: 1, Text: "hi", Speaker: "<b>Bob</b> & co"},
		{Start: 1, End: 2, Text: "a\r\rb", Speaker: "Anna\n\nSmith"},
		{Start: 2, End: 3, Text: "2\n00:00:05,000 --> 00:00:06,000\nforged ---> x", Speaker: "A-->B"},
		{Start: 3, End: 4, Text: "no speaker", Speaker: " \t"},
		{Start: 4, End: 5, Text: "x", Speaker: "Bob --"},
	}}
	require.Equal(t, "1\n00:00:00,000 --> 00:00:01,000\n<b>Bob</b> & co: hi\n\n"+
		"2\n00:00:01,000 --> 00:00:02,000\nAnna Smith: a\nb\n\n"+
		"3\n00:00:02,000 --> 00:00:03,000\nA->B: 2\n00:00:05,000 -> 00:00:06,000\nforged -> x\n\n"+
		"4\n00:00:03,000 --> 00:00:04,000\nno speaker\n\n"+
		"5\n00:00:04,000 --> 00:00:05,000\nBob --: x\n\n", renderSRT(r))
	require.Equal(t, "WEBVTT\n\n"+
		"1\n00:00:00.000 --> 00:00:01.000\n<v &lt;b&gt;Bob&lt;/b&gt; &amp; co>hi\n\n"+
		"2\n00:00:01.000 --> 00:00:02.000\n<v Anna Smith>a\nb\n\n"+
		"3\n00:00:02.000 --> 00:00:03.000\n<v A--&gt;B>2\n00:00:05,000 --&gt; 00:00:06,000\nforged ---&gt; x\n\n"+
		"4\n00:00:03.000 --> 00:00:04.000\nno speaker\n\n"+
		"5\n00:00:04.000 --> 00:00:05.000\n<v Bob -- >x\n\n", renderVTT(r))
}

func TestTimestampOutOfRange(t *testing.T) {
	t.Parallel()
	for seconds, want := range map[float64]string{
		math.NaN():     "00:00:00.000",
		math.Inf(-1):   "00:00:00.000",
		math.Inf(1):    "99:59:59.999",
		1e300:          "99:59:59.999",
		360000:         "99:59:59.999",
		359999.999:     "99:59:59.999",
		359999.998:     "99:59:59.998",
		-math.MaxInt64: "00:00:00.000",
	} {
		require.Equal(t, want, timestamp(seconds, "."), "%v s", seconds)
	}
}

func TestNoArrows(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":              "",
		"a -> b":        "a -> b",
		"a --> b":       "a -> b",
		"a ----> b":     "a -> b",
		"-->-->":        "->->",
		"-- >":          "-- >",
		"<!-- x -->":    "<!-- x ->",
		"--->" + "-->":  "->->",
		"a-b--c--->d>e": "a-b--c->d>e",
	} {
		require.Equal(t, want, noArrows(in), "%q", in)
	}
	long := strings.Repeat("-", 1<<20) + ">"
	require.Equal(t, "->", noArrows(long), "linear in the length of a run of hyphens")
}
