package sandbox

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/internal/usage"
)

// Assumed bitrates turning a media file's size into a duration.
const (
	audioBytesPerSecond = 16_000  // 128 kbit/s
	videoBytesPerSecond = 500_000 // 4 Mbit/s
	// maxSegments caps the segments of long media.
	maxSegments = 400
)

// seed is a hash of the job input; every made-up value derives from it.
type seed [32]byte

func newSeed(svc jobs.ServiceID, in any) seed {
	b, _ := json.Marshal(in) // re-encoded, so formatting of the request does not matter
	return sha256.Sum256(append([]byte(string(svc)+"\x00"), b...))
}

// rng returns a generator for one section of the result, so that sections
// do not change with which other sections were requested.
func (s seed) rng(section string) *rand.Rand {
	h := sha256.Sum256(append(s[:], section...))
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(h[:8]), binary.LittleEndian.Uint64(h[8:16])))
}

var transcriptLines = []string{
	"Welcome, everyone, and thanks for joining.",
	"Let's start with a quick look at the agenda.",
	"The numbers for the last quarter look encouraging.",
	"We still need a decision on the release date.",
	"Could you share your screen, please?",
	"I think the second option is the safer one.",
	"Let me check that and get back to you.",
	"That covers the main points for today.",
	"I'll send a summary by email after the call.",
	"Any questions before we move on?",
}

// transcription is a transcription job.
type transcription struct {
	in      jobs.TranscriptionInput
	opts    jobs.TranscriptionOptions
	pricing providers.Pricing
	size    int64
	probed  float64 // the media's duration, when the media stage probed it
	seed    seed
}

func (j *transcription) result() any {
	r := j.seed.rng("transcript")
	bps := audioBytesPerSecond
	if j.in.Type == "video" {
		bps = videoBytesPerSecond
	}
	dur := duration(r, j.size, bps)
	if j.probed > 0 {
		dur = round(j.probed, 2)
	}
	lang := j.opts.Language
	if lang == "" || lang == "auto" || j.opts.TranslateToEnglish {
		lang = "en" // the language of the transcript
	}
	first := "[sandbox] This transcript is simulated."
	if j.opts.TranslateToEnglish {
		// The simulated speech is English already; the first segment says
		// it stands for a translation (docs/api.md, Extensions).
		first = "[sandbox] This transcript is simulated, translated into English."
	}
	segs := speech(r, dur, first)
	res := jobs.TranscriptionResult{Format: j.opts.EffectiveFormat(), Duration: dur, Language: lang}
	var text strings.Builder
	for i := range segs {
		text.WriteString(segs[i].text + " ")
		seg := jobs.Segment{Start: segs[i].start, End: segs[i].end, Text: segs[i].text, Confidence: &segs[i].confidence}
		if j.opts.WantsDiarization() {
			seg.Speaker = fmt.Sprintf("speaker_%d", segs[i].speaker+1)
		}
		if j.opts.WantsTimestamps() {
			res.Segments = append(res.Segments, seg)
		}
	}
	res.Text = strings.TrimSpace(text.String())
	if j.opts.IncludeUsage {
		out := usage.EstimateTokens(text.String())
		cost := usage.Cost(j.pricing, usage.Metered{Minutes: dur / 60, Characters: utf8.RuneCountInString(text.String()), Pages: 1, Tokens: out})
		res.Usage = usage.New(-1, out, cost)
	}
	return res
}

// translation is a translation job.
type translation struct {
	in      jobs.TranslationInput
	opts    jobs.TranslationOptions
	pricing providers.Pricing
	size    int64
	seed    seed
	// chars counts the characters of a text document the sandbox
	// "translated" into its result file; 0 otherwise.
	chars int
}

func (j *translation) result() any {
	src := j.opts.SourceLanguage
	if src == "" || src == "auto" {
		src = "en" // what the sandbox "detects"
	}
	res := jobs.TranslationResult{SourceLanguage: src, TargetLanguage: j.in.TargetLanguage}
	var chars, outTokens int
	if j.in.Type == "document" {
		// The translated document is the result file (written by
		// translateDocument); the count is its characters when it is
		// text, else one character per byte.
		chars = j.chars
		if chars <= 0 {
			chars = int(j.size)
		}
		if chars <= 0 {
			chars = 1000 + j.seed.rng("document").IntN(19_000)
		}
		outTokens = (chars + 3) / 4
	} else {
		chars = utf8.RuneCountInString(j.in.Content)
		note := ""
		if f := j.opts.Formality; f == "formal" || f == "informal" {
			note = ", " + f
		}
		res.Content = fmt.Sprintf("[sandbox %s→%s%s] %s", src, j.in.TargetLanguage, note, j.in.Content)
		outTokens = usage.EstimateTokens(res.Content)
	}
	res.CharacterCount = chars
	if j.opts.IncludeUsage {
		in := (chars + 3) / 4
		cost := usage.Cost(j.pricing, usage.Metered{Characters: chars, Pages: pages(chars), Tokens: in + outTokens})
		res.Usage = usage.New(in, outTokens, cost)
	}
	return res
}

// llmTask is an llm-task job.
type llmTask struct {
	in       jobs.LLMTaskInput
	opts     jobs.LLMTaskOptions
	pricing  providers.Pricing
	provider string
	models   []string
	size     int64
	seed     seed
}

func (j *llmTask) result() any {
	model := j.opts.Model
	if model == "" && len(j.models) > 0 {
		model = j.models[0]
	}
	if model == "" {
		model = "sandbox-model"
	}
	inputChars := utf8.RuneCountInString(j.in.Text)
	asked, instructions := j.in.Prompt, j.in.SystemPrompt+j.in.Prompt
	if j.in.Type == "messages" {
		// The conversation, all of it input, is billed by its characters;
		// the answer answers its last user message.
		inputChars, instructions = 0, ""
		for _, m := range j.in.Messages {
			inputChars += utf8.RuneCountInString(m.Content)
			if m.Role == "user" {
				asked = m.Content
			}
		}
	}
	if j.in.Type == "document" {
		inputChars = int(j.size)
		if inputChars <= 0 {
			inputChars = 2000 + j.seed.rng("document").IntN(8000)
		}
	}
	content := fmt.Sprintf("[sandbox] Simulated answer from %s using model %s to the prompt %q over %d characters of input. "+
		"A real provider would answer here; this text only shows the shape of a result.",
		j.provider, model, clip(asked, 80), inputChars)
	content = formatted(content, j.opts.ResponseFormat)
	res := jobs.LLMTaskResult{Content: content, FinishReason: "completed"}
	// Always: the gateway bills the tokens and shows result.usage only
	// when the job set include_usage (docs/api.md, Usage and cost).
	in := usage.EstimateTokens(instructions) + (inputChars+3)/4
	out := usage.EstimateTokens(content)
	cost := usage.Cost(j.pricing, usage.Metered{Characters: inputChars, Pages: pages(inputChars), Tokens: in + out})
	res.Usage = usage.New(in, out, cost)
	return res
}

// pieces is the answer's content cut word by word, spaces kept, as the
// sandbox streams it.
func (j *llmTask) pieces() []string {
	content := j.result().(jobs.LLMTaskResult).Content
	var out []string
	for _, w := range strings.SplitAfter(content, " ") {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// formatted is the answer text as response_format asks: itself, a JSON
// object carrying it, or a minimal instance of the JSON schema.
func formatted(text string, format *jobs.LLMResponseFormat) string {
	var answer any
	switch {
	case format == nil || format.JSONSchema == nil && format.Type != "json_object":
		return text
	case format.Type == "json_object":
		answer = map[string]string{"answer": text}
	default:
		var schema any
		if err := json.Unmarshal(format.JSONSchema.Schema, &schema); err == nil {
			answer = schemaInstance(schema)
		}
	}
	b, err := json.Marshal(answer)
	if err != nil {
		return text
	}
	return string(b)
}

// videoAnalysis is a video-analysis job.
type videoAnalysis struct {
	in      jobs.VideoAnalysisInput
	opts    jobs.VideoAnalysisOptions
	pricing providers.Pricing
	size    int64
	probed  float64 // the media's duration, when the media stage probed it
	seed    seed
}

var (
	labelNames  = []string{"person", "car", "tree", "building", "dog", "laptop", "street", "sky", "table", "bicycle"}
	topicNames  = []string{"technology", "business", "travel", "education", "sports", "cooking", "music"}
	brandNames  = []string{"Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark Industries"} // fictional
	screenTexts = []string{"SANDBOX", "Quarterly review", "EXIT", "Open 24 hours", "Welcome", "Chapter 1"}
	resolutions = [][2]int{{1920, 1080}, {1280, 720}, {3840, 2160}}
	frameRates  = []float64{24, 25, 29.97, 30, 60}
)

func (j *videoAnalysis) result() any {
	thr := j.opts.EffectiveConfidenceThreshold()
	lang := j.opts.Language
	if lang == "" || lang == "auto" {
		lang = "en"
	}
	r := j.seed.rng("metadata")
	dur := duration(r, j.size, videoBytesPerSecond)
	if j.probed > 0 {
		dur = round(j.probed, 2)
	}
	res := jobs.VideoAnalysisResult{VideoMetadata: metadata(r, dur, j.in.URL)}
	var text strings.Builder
	for _, f := range j.in.Features {
		r := j.seed.rng(f)
		switch f {
		case "labels":
			res.Labels = detections(r, labelNames, 5, thr, dur)
		case "topics":
			res.Topics = detections(r, topicNames, 3, thr, dur)
		case "brands":
			res.Brands = detections(r, brandNames, 2, thr, dur)
		case "scenes":
			res.Scenes = scenes(r, dur)
		case "faces":
			res.Faces = faces(r, thr, dur)
		case "speech_to_text":
			for i, s := range speech(r, dur, "[sandbox] This speech is simulated.") {
				if s.confidence < thr {
					s.confidence = between(r, thr, 1)
				}
				res.SpeechToText = append(res.SpeechToText, jobs.SpeechSegment{
					Start: s.start, End: s.end, Text: s.text, SpeakerID: s.speaker, Language: lang, Confidence: s.confidence,
				})
				text.WriteString(res.SpeechToText[i].Text + " ")
			}
		case "ocr":
			for _, d := range detections(r, screenTexts, 3, thr, dur) {
				res.OCR = append(res.OCR, jobs.TextDetection{Text: d.Name, Confidence: d.Confidence, Language: "en", Instances: d.Instances})
			}
		case "content_moderation":
			res.ContentModeration = moderation(r, thr, dur)
		case "sentiment":
			res.Sentiment = sentiment(r, dur)
		case "summary":
			res.Summary = fmt.Sprintf("[sandbox] Simulated summary of a %s video (%dx%d): a meeting-room scene with people talking; no real analysis was done.",
				clock(dur), res.VideoMetadata.Width, res.VideoMetadata.Height)
			text.WriteString(res.Summary)
		}
	}
	if j.opts.IncludeUsage {
		out := usage.EstimateTokens(text.String())
		cost := usage.Cost(j.pricing, usage.Metered{Minutes: dur / 60, Pages: 1, Tokens: out})
		res.Usage = usage.New(-1, out, cost)
	}
	return res
}

func metadata(r *rand.Rand, dur float64, rawURL string) *jobs.VideoMetadata {
	res := resolutions[r.IntN(len(resolutions))]
	m := &jobs.VideoMetadata{
		Duration: dur, Width: res[0], Height: res[1],
		FrameRate: frameRates[r.IntN(len(frameRates))], Format: "mp4", Codec: "h264",
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return m
	}
	switch ext := strings.ToLower(strings.TrimPrefix(path.Ext(u.Path), ".")); ext {
	case "mov", "mkv", "avi":
		m.Format = ext
	case "webm":
		m.Format, m.Codec = "webm", "vp9"
	}
	return m
}

// detections picks up to n names; the first always clears the threshold,
// the others only when their confidence does.
func detections(r *rand.Rand, names []string, n int, thr, dur float64) []jobs.Detection {
	perm := r.Perm(len(names))[:min(n, len(names))]
	out := make([]jobs.Detection, 0, len(perm))
	for i, k := range perm {
		c := between(r, 0.3, 1)
		if i == 0 {
			c = between(r, max(thr, 0.9), 1)
		}
		if c < thr {
			continue
		}
		out = append(out, jobs.Detection{Name: names[k], Confidence: c, Instances: instances(r, 1+r.IntN(3), thr, dur)})
	}
	return out
}

func instances(r *rand.Rand, n int, thr, dur float64) []jobs.TimedInstance {
	out := make([]jobs.TimedInstance, n)
	for i := range out {
		start := r.Float64() * dur * 0.9
		end := min(start+1+r.Float64()*dur*0.1, dur)
		out[i] = jobs.TimedInstance{Start: round(start, 2), End: round(end, 2), Confidence: between(r, max(thr, 0.6), 1)}
	}
	slices.SortFunc(out, func(a, b jobs.TimedInstance) int { return cmp.Compare(a.Start, b.Start) })
	return out
}

func scenes(r *rand.Rand, dur float64) []jobs.Scene {
	n := min(max(int(dur/20), 1), 50)
	cuts := make([]float64, 0, n+1)
	cuts = append(cuts, 0, dur)
	for range n - 1 {
		cuts = append(cuts, round(r.Float64()*dur, 2))
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	out := make([]jobs.Scene, 0, len(cuts)-1)
	for i := 0; i+1 < len(cuts); i++ {
		out = append(out, jobs.Scene{Index: i, Start: cuts[i], End: cuts[i+1]})
	}
	return out
}

func faces(r *rand.Rand, thr, dur float64) []jobs.Face {
	out := make([]jobs.Face, 1+r.IntN(3))
	for i := range out {
		emb := make([]byte, 32)
		for k := 0; k < len(emb); k += 8 {
			binary.LittleEndian.PutUint64(emb[k:], r.Uint64())
		}
		out[i] = jobs.Face{TrackID: i + 1, Fingerprint: base64.StdEncoding.EncodeToString(emb), Instances: instances(r, 1+r.IntN(3), thr, dur)}
	}
	return out
}

func moderation(r *rand.Rand, thr, dur float64) *jobs.ContentModeration {
	m := &jobs.ContentModeration{Signals: []jobs.ModerationSignal{}}
	if r.Float64() < 0.25 { // most sandbox videos are harmless
		label := jobs.ModerationLabels[r.IntN(len(jobs.ModerationLabels))]
		if c := between(r, 0.3, 1); c >= thr {
			m.Signals = append(m.Signals, jobs.ModerationSignal{Label: label, Confidence: c, Instances: instances(r, 1, thr, dur)})
		}
	}
	m.IsSafe = len(m.Signals) == 0
	return m
}

func sentiment(r *rand.Rand, dur float64) *jobs.Sentiment {
	s := &jobs.Sentiment{Score: round(r.Float64()*2-1, 2)}
	s.Overall = sentimentLabel(s.Score)
	n := 3 + r.IntN(3)
	for i := range n {
		score := round(max(-1, min(1, s.Score+r.Float64()*0.6-0.3)), 2)
		s.Instances = append(s.Instances, jobs.SentimentInstance{
			Start: round(dur*float64(i)/float64(n), 2), End: round(dur*float64(i+1)/float64(n), 2),
			Label: sentimentLabel(score), Score: score,
		})
	}
	return s
}

func sentimentLabel(score float64) string {
	switch {
	case score > 0.25:
		return "positive"
	case score < -0.25:
		return "negative"
	}
	return "neutral"
}

// segment is one made-up piece of speech.
type segment struct {
	start, end float64
	text       string
	confidence float64
	speaker    int
}

// speech covers dur with segments of a few seconds; the first says it is
// simulated. Every value is drawn whether or not the caller uses it, so
// options do not change the rest of the transcript.
func speech(r *rand.Rand, dur float64, first string) []segment {
	speakers := 2 + r.IntN(2)
	minLen := max(2.5, dur/maxSegments)
	var out []segment
	speaker := 0
	for t := 0.0; t < dur-0.05; {
		end := min(t+minLen+r.Float64()*5, dur)
		text := transcriptLines[r.IntN(len(transcriptLines))]
		if len(out) == 0 {
			text = first
		}
		conf := round(0.82+r.Float64()*0.17, 3)
		if change := r.Float64() < 0.4; change && len(out) > 0 {
			speaker = (speaker + 1 + r.IntN(speakers-1)) % speakers
		}
		out = append(out, segment{start: round(t, 2), end: round(end, 2), text: text, confidence: conf, speaker: speaker})
		t = end
	}
	if len(out) > 0 {
		// The loop leaves the last few hundredths uncovered at times: the
		// segments cover the whole media.
		out[len(out)-1].end = round(dur, 2)
	}
	return out
}

// duration derives the media duration from its size, or draws one.
func duration(r *rand.Rand, size int64, bytesPerSecond int) float64 {
	if size > 0 {
		return round(max(1, float64(size)/float64(bytesPerSecond)), 2)
	}
	return round(30+r.Float64()*270, 2)
}

// between draws a confidence in [lo, hi], rounded up to three decimals so
// that it never falls below lo.
func between(r *rand.Rand, lo, hi float64) float64 {
	v := lo + (hi-lo)*r.Float64()
	return min(math.Ceil(v*1000)/1000, hi)
}

func round(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

func pages(chars int) int { return max(1, (chars+1799)/1800) }

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

func clock(seconds float64) string {
	s := int(math.Round(seconds))
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}

// translateDocument writes the sandbox's "translation" of a document to
// dst: a text document line by line, each line marked like a translated
// text; any other document unchanged, as the simulator cannot read it.
func (j *translation) translateDocument(doc *providers.Media, dst string) error {
	src, err := os.ReadFile(doc.Path)
	if err != nil {
		return fmt.Errorf("sandbox: read the document: %w", err)
	}
	if !strings.HasPrefix(doc.ContentType, "text/") || !utf8.Valid(src) {
		return os.WriteFile(dst, src, 0o600)
	}
	j.chars = utf8.RuneCount(src)
	mark := fmt.Sprintf("[sandbox →%s] ", j.in.TargetLanguage)
	var out strings.Builder
	for line := range strings.Lines(string(src)) {
		if strings.TrimSpace(line) != "" {
			out.WriteString(mark)
		}
		out.WriteString(line)
	}
	return os.WriteFile(dst, []byte(out.String()), 0o600)
}
