package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"

	"golang.org/x/text/language"
	"golang.org/x/text/language/display"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/media"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/internal/usage"
)

// defaultMaxFileMB caps fetched audio when the capability sets no
// max_file_size_mb; it is OpenAI's own upload limit.
const defaultMaxFileMB = 25

type verboseTranscript struct {
	Language string  `json:"language"`
	Duration float64 `json:"duration"`
	Text     string  `json:"text"`
	Segments []struct {
		Start      float64  `json:"start"`
		End        float64  `json:"end"`
		Text       string   `json:"text"`
		AvgLogprob *float64 `json:"avg_logprob"`
	} `json:"segments"`
	// Words come with timestamp_granularities[]=word, for the whole audio.
	Words []struct {
		Word  string  `json:"word"`
		Start float64 `json:"start"`
		End   float64 `json:"end"`
	} `json:"words"`
	Usage *struct {
		InputTokens  *int `json:"input_tokens"`
		OutputTokens *int `json:"output_tokens"`
	} `json:"usage"`
}

// transcribe fetches the audio and posts it to /audio/transcriptions, or
// to /audio/translations for a transcript in English.
func (a *Adapter) transcribe(ctx context.Context, call providers.Call) (any, error) {
	var (
		in   jobs.TranscriptionInput
		opts jobs.TranscriptionOptions
	)
	if err := call.Decode(&in, &opts); err != nil {
		return nil, err
	}
	if opts.WantsDiarization() {
		return nil, providers.Permanent(jobs.CodeUnsupportedOption,
			"the openai adapter cannot label speakers (diarization); route such jobs to another provider", nil)
	}
	capab := call.Capability()
	limitMB := capab.Limits.MaxFileSizeMB
	if limitMB <= 0 {
		limitMB = defaultMaxFileMB
	}
	audio, filename, err := a.audio(ctx, call, in.URL, int64(limitMB)<<20)
	if err != nil {
		return nil, err
	}

	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	fw, err := w.CreateFormFile("file", filename)
	if err != nil {
		return nil, fmt.Errorf("openai: build request: %w", err)
	}
	if _, err := fw.Write(audio); err != nil {
		return nil, fmt.Errorf("openai: build request: %w", err)
	}
	fields := [][2]string{{"model", a.model}, {"response_format", "verbose_json"}}
	endpoint := "/audio/transcriptions"
	if opts.TranslateToEnglish {
		// Translations take neither language nor timestamp granularities
		// (docs/providers.md, openai).
		endpoint = "/audio/translations"
	} else if opts.Language != "" && opts.Language != "auto" {
		// The API takes ISO 639-1 codes: send "pt" for "pt-BR".
		lang := opts.Language
		if tag, err := language.Parse(lang); err == nil {
			base, _ := tag.Base()
			lang = base.String()
		}
		fields = append(fields, [2]string{"language", lang})
	}
	if opts.WantsTimestamps() && !opts.TranslateToEnglish {
		// Asking for words alone would drop the segments.
		fields = append(fields, [2]string{"timestamp_granularities[]", "segment"}, [2]string{"timestamp_granularities[]", "word"})
	}
	for _, f := range fields {
		if err := w.WriteField(f[0], f[1]); err != nil {
			return nil, fmt.Errorf("openai: build request: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("openai: build request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.baseURL+endpoint, &body)
	if err != nil {
		return nil, fmt.Errorf("openai: build request: %w", err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Accept", "application/json")
	answer, err := a.send(ctx, req)
	if err != nil {
		return nil, err
	}
	var vt verboseTranscript
	if err := json.Unmarshal(answer, &vt); err != nil {
		return nil, a.badResponse(err)
	}

	res := jobs.TranscriptionResult{Format: opts.EffectiveFormat(), Duration: vt.Duration, Language: opts.Language}
	switch {
	case opts.TranslateToEnglish:
		res.Language = "en" // the transcript's language
	case res.Language == "" || res.Language == "auto":
		res.Language = languageCode(vt.Language)
	}
	if opts.WantsTimestamps() {
		for _, s := range vt.Segments {
			seg := jobs.Segment{Start: s.Start, End: s.End, Text: strings.TrimSpace(s.Text)}
			if s.AvgLogprob != nil {
				c := math.Round(min(1, max(0, math.Exp(*s.AvgLogprob)))*1000) / 1000
				seg.Confidence = &c
			}
			res.Segments = append(res.Segments, seg)
		}
		if len(res.Segments) == 0 && strings.TrimSpace(vt.Text) != "" {
			// Servers that return no segments still transcribed something.
			res.Segments = []jobs.Segment{{Start: 0, End: vt.Duration, Text: strings.TrimSpace(vt.Text)}}
		}
		vt.placeWords(res.Segments)
	}
	if opts.IncludeUsage {
		u := &jobs.Usage{}
		m := usage.Metered{Minutes: vt.Duration / 60, Pages: 1}
		measurable := capab.Pricing.Unit == providers.PerMinute || capab.Pricing.Unit == providers.PerRequest
		if vt.Usage != nil && vt.Usage.InputTokens != nil && vt.Usage.OutputTokens != nil {
			u.InputTokens, u.OutputTokens = vt.Usage.InputTokens, vt.Usage.OutputTokens
			m.Tokens = *u.InputTokens + *u.OutputTokens
			measurable = measurable || capab.Pricing.Unit == providers.PerToken
		}
		if measurable {
			cost := usage.Cost(capab.Pricing, m)
			u.Cost = &cost
		}
		res.Usage = u
	}
	return res, nil
}

// placeWords gives each word to the segment its middle falls in (or the
// nearest before it), its times kept within that segment: Whisper times
// words and segments apart, and they may disagree by a few hundredths
// (docs/api.md, Extensions: words).
func (vt *verboseTranscript) placeWords(segs []jobs.Segment) {
	i := 0
	for _, w := range vt.Words {
		text := strings.TrimSpace(w.Word)
		if len(segs) == 0 || text == "" {
			continue
		}
		middle := (w.Start + w.End) / 2
		for i+1 < len(segs) && middle >= segs[i+1].Start {
			i++
		}
		s := &segs[i]
		start := min(max(w.Start, s.Start), s.End)
		s.Words = append(s.Words, jobs.Word{Start: start, End: min(max(w.End, start), s.End), Text: text})
	}
}

// fetch downloads the job's media, at most limit bytes, and picks a file
// name whose extension tells the server the audio format.
// audio is the call's audio: the WAV file the gateway's media stage
// extracted (docs/media.md), or, for a job that started before the stage
// existed, input.url fetched.
func (a *Adapter) audio(ctx context.Context, call providers.Call, rawURL string, limit int64) ([]byte, string, error) {
	if call.Media == nil {
		return a.fetch(ctx, rawURL, limit)
	}
	if call.Media.Size > limit {
		return nil, "", providers.Permanent(jobs.CodeFileTooLarge,
			fmt.Sprintf("the extracted audio (%d MB) is larger than the %d MB provider %q accepts", call.Media.Size>>20, limit>>20, a.provider.ID), nil)
	}
	data, err := os.ReadFile(call.Media.Path)
	if err != nil {
		return nil, "", fmt.Errorf("openai: read the extracted audio: %w", err)
	}
	return data, "audio.wav", nil
}

func (a *Adapter) fetch(ctx context.Context, rawURL string, limit int64) ([]byte, string, error) {
	svc := jobs.Transcriptions
	u, err := media.ParseURL(svc, rawURL)
	if err != nil {
		return nil, "", providers.MediaError(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", providers.InputError(media.UnreadableCode(svc), "input.url is not a valid request URL", err)
	}
	resp, err := a.media.Do(req)
	if err != nil {
		return nil, "", providers.MediaError(media.TransportError(ctx, u, err))
	}
	defer func() { _ = resp.Body.Close() }()
	if err := media.StatusError(u, resp.StatusCode); err != nil {
		return nil, "", providers.MediaError(err)
	}
	tooLarge := providers.Permanent(jobs.CodeFileTooLarge,
		fmt.Sprintf("the media is larger than the %d MB provider %q accepts", limit>>20, a.provider.ID), nil)
	if resp.ContentLength > limit {
		return nil, "", tooLarge
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, "", providers.MediaError(media.TransportError(ctx, u, err))
	}
	if int64(len(data)) > limit {
		return nil, "", tooLarge
	}

	name := path.Base(u.Path)
	if path.Ext(name) == "" || name == "/" || name == "." {
		name = "audio"
		if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err == nil {
			if exts, _ := mime.ExtensionsByType(mt); len(exts) > 0 {
				name += exts[0]
			}
		}
	}
	return data, name, nil
}

// languageCodes maps English language names, as Whisper reports them
// ("english"), to ISO 639-1 codes.
var languageCodes = sync.OnceValue(func() map[string]string {
	names := display.English.Languages()
	m := make(map[string]string)
	for a := 'a'; a <= 'z'; a++ {
		for b := 'a'; b <= 'z'; b++ {
			base, err := language.ParseBase(string([]rune{a, b}))
			if err != nil {
				continue
			}
			if name := names.Name(base); name != "" {
				m[strings.ToLower(name)] = base.String()
			}
		}
	}
	return m
})

// languageCode turns the language of a transcription answer into a BCP 47
// code; unknown names give "".
func languageCode(s string) string {
	if s == "" {
		return ""
	}
	if code, ok := languageCodes()[strings.ToLower(s)]; ok {
		return code
	}
	if tag, err := language.Parse(s); err == nil {
		return tag.String()
	}
	return ""
}
