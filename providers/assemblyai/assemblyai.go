// Package assemblyai is the "assemblyai" adapter: transcriptions through
// AssemblyAI's asynchronous API (docs/providers.md, assemblyai). The
// audio is uploaded (POST /v2/upload), a transcript is requested (POST
// /v2/transcript) and then read (GET /v2/transcript/{id}) until it is
// completed; the job workflow does the reading on durable timers. Purge
// deletes a transcript (DELETE /v2/transcript/{id}) when its job is
// deleted (docs/providers.md, Deleting a job's vendor copy).
package assemblyai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/text/language"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/internal/settings"
	"github.com/ai-job-gateway/gateway/providers/internal/usage"
	"github.com/ai-job-gateway/gateway/providers/internal/vendorhttp"
)

// Settings are the assemblyai adapter's provider settings.
type Settings struct {
	// API: base_url is the API root, https://api.assemblyai.com (default)
	// or https://api.eu.assemblyai.com for the EU region; api_key_env names
	// the environment variable holding the API key.
	settings.API
	// SpeechModel is AssemblyAI's speech_model (for example "universal");
	// empty leaves AssemblyAI's default.
	SpeechModel string `json:"speech_model"`
}

// Adapter calls the AssemblyAI API.
type Adapter struct {
	provider    *providers.Provider
	baseURL     string
	key         string
	speechModel string
	client      *http.Client
	// poll is the first wait between transcript reads when Run does the
	// whole call itself; it doubles up to 10 s.
	poll time.Duration
}

// New builds the adapter of p (see providers.Option).
func New(p *providers.Provider, opts ...providers.Option) (*Adapter, error) {
	o := providers.NewOptions(opts...)
	s := Settings{API: settings.API{BaseURL: "https://api.assemblyai.com"}}
	if err := settings.Decode(p.Settings, &s); err != nil {
		return nil, err
	}
	baseURL, key, err := s.Open("https://api.assemblyai.com", "ASSEMBLYAI_API_KEY", o.LookupEnv)
	if err != nil {
		return nil, err
	}
	return &Adapter{provider: p, baseURL: baseURL, key: key, speechModel: s.SpeechModel,
		client: o.Client(10 * time.Minute), poll: o.Poll(2 * time.Second)}, nil
}

// Services are transcriptions.
func (a *Adapter) Services() []jobs.ServiceID { return []jobs.ServiceID{jobs.Transcriptions} }

// Run submits the call and reads the transcript until it is done.
func (a *Adapter) Run(ctx context.Context, call providers.Call) (json.RawMessage, error) {
	handle, err := a.Submit(ctx, call)
	if err != nil {
		return nil, err
	}
	wait := a.poll
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		check, err := a.Check(ctx, call, handle)
		if err != nil {
			return nil, err
		}
		if check.Done {
			return check.Result, nil
		}
		call.Progress(check.Progress)
		wait = min(2*wait, 10*time.Second)
	}
}

// transcriptRequest is the body of POST /v2/transcript.
type transcriptRequest struct {
	AudioURL          string `json:"audio_url"`
	LanguageCode      string `json:"language_code,omitempty"`
	LanguageDetection bool   `json:"language_detection,omitempty"`
	SpeakerLabels     bool   `json:"speaker_labels,omitempty"`
	SpeechModel       string `json:"speech_model,omitempty"`
	Punctuate         bool   `json:"punctuate"`
	FormatText        bool   `json:"format_text"`
}

// Submit uploads the audio the media stage extracted and requests its
// transcript; the handle is the transcript id.
func (a *Adapter) Submit(ctx context.Context, call providers.Call) (string, error) {
	var in jobs.TranscriptionInput
	var opts jobs.TranscriptionOptions
	if err := call.Decode(&in, &opts); err != nil {
		return "", err
	}
	if call.Media == nil {
		return "", providers.Permanent(jobs.CodeUnsupportedInput,
			"the assemblyai adapter uploads the audio the gateway's media stage extracted, and this job has none", nil)
	}
	if limit := call.Capability().Limits.MaxFileSizeMB; limit > 0 && call.Media.Size > int64(limit)<<20 {
		return "", providers.Permanent(jobs.CodeFileTooLarge,
			fmt.Sprintf("the extracted audio (%d MB) is larger than the %d MB provider %q accepts", call.Media.Size>>20, limit, a.provider.ID), nil)
	}
	audioURL, err := a.upload(ctx, call.Media.Path)
	if err != nil {
		return "", err
	}
	req := transcriptRequest{AudioURL: audioURL, SpeakerLabels: opts.WantsDiarization(),
		SpeechModel: a.speechModel, Punctuate: true, FormatText: true}
	if code := languageCode(opts.Language); code != "" {
		req.LanguageCode = code
	} else {
		req.LanguageDetection = true
	}
	body, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	data, err := a.send(ctx, http.MethodPost, "/v2/transcript", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	var t transcript
	if err := json.Unmarshal(data, &t); err != nil || t.ID == "" {
		return "", a.badResponse(err)
	}
	if t.Status == "error" {
		return "", a.refused(t.Error)
	}
	return t.ID, nil
}

func (a *Adapter) upload(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("assemblyai: open the audio: %w", err)
	}
	defer f.Close()
	data, err := a.send(ctx, http.MethodPost, "/v2/upload", "application/octet-stream", f)
	if err != nil {
		return "", err
	}
	var up struct {
		UploadURL string `json:"upload_url"`
	}
	if err := json.Unmarshal(data, &up); err != nil || up.UploadURL == "" {
		return "", a.badResponse(err)
	}
	return up.UploadURL, nil
}

// transcript is AssemblyAI's transcript resource, as far as the gateway
// reads it. Times are in milliseconds.
type transcript struct {
	ID            string      `json:"id"`
	Status        string      `json:"status"` // queued, processing, completed, error
	Error         string      `json:"error"`
	Text          string      `json:"text"`
	LanguageCode  string      `json:"language_code"`
	AudioDuration float64     `json:"audio_duration"` // seconds
	Utterances    []utterance `json:"utterances"`
}

// utterance is an utterance or a sentence, with its words.
type utterance struct {
	Text       string   `json:"text"`
	Start      float64  `json:"start"`
	End        float64  `json:"end"`
	Confidence *float64 `json:"confidence"`
	Speaker    *string  `json:"speaker"`
	Words      []struct {
		Text       string   `json:"text"`
		Start      float64  `json:"start"`
		End        float64  `json:"end"`
		Confidence *float64 `json:"confidence"`
	} `json:"words"`
}

// Check reads the transcript. When it is completed, the segments come
// from its utterances (diarization) or its sentences.
func (a *Adapter) Check(ctx context.Context, call providers.Call, handle string) (providers.Check, error) {
	var opts jobs.TranscriptionOptions
	var in jobs.TranscriptionInput
	if err := call.Decode(&in, &opts); err != nil {
		return providers.Check{}, err
	}
	route := "/v2/transcript/" + url.PathEscape(handle)
	data, err := a.send(ctx, http.MethodGet, route, "", nil)
	if err != nil {
		return providers.Check{}, err
	}
	var t transcript
	if err := json.Unmarshal(data, &t); err != nil {
		return providers.Check{}, a.badResponse(err)
	}
	switch t.Status {
	case "queued":
		return providers.Check{Progress: 5}, nil
	case "processing":
		return providers.Check{Progress: 50}, nil
	case "error":
		return providers.Check{}, a.refused(t.Error)
	case "completed":
	default:
		return providers.Check{}, a.badResponse(fmt.Errorf("transcript status %q", t.Status))
	}

	res := jobs.TranscriptionResult{Format: opts.EffectiveFormat(), Duration: t.AudioDuration,
		Language: opts.Language, Text: t.Text}
	if res.Language == "" || res.Language == "auto" {
		res.Language = bcp47(t.LanguageCode)
	}
	if opts.WantsTimestamps() || opts.WantsDiarization() {
		pieces := t.Utterances
		if !opts.WantsDiarization() {
			if pieces, err = a.sentences(ctx, route); err != nil {
				return providers.Check{}, err
			}
		}
		for _, u := range pieces {
			seg := jobs.Segment{Start: u.Start / 1000, End: u.End / 1000, Text: strings.TrimSpace(u.Text), Confidence: u.Confidence}
			if u.Speaker != nil && opts.WantsDiarization() {
				seg.Speaker = speakerName(*u.Speaker)
			}
			if opts.WantsTimestamps() {
				for _, w := range u.Words {
					seg.Words = append(seg.Words, jobs.Word{Start: w.Start / 1000, End: w.End / 1000, Text: w.Text, Confidence: w.Confidence})
				}
			}
			res.Segments = append(res.Segments, seg)
		}
	}
	if opts.IncludeUsage {
		res.Usage = usage.New(-1, -1, usage.Cost(call.Capability().Pricing, usage.Metered{Minutes: t.AudioDuration / 60, Pages: 1}))
	}
	result, err := json.Marshal(res)
	if err != nil {
		return providers.Check{}, err
	}
	return providers.Check{Done: true, Result: result}, nil
}

// Purge deletes the transcript with this handle: AssemblyAI then removes
// its data and keeps the record, marked deleted. A transcript AssemblyAI
// does not know (404) is gone already, which is success. Failures are
// classified as Submit's.
func (a *Adapter) Purge(ctx context.Context, _ providers.Call, handle string) error {
	_, err := a.send(ctx, http.MethodDelete, "/v2/transcript/"+url.PathEscape(handle), "", nil)
	var perr *providers.Error
	if errors.As(err, &perr) && perr.StatusCode == http.StatusNotFound {
		return nil
	}
	return err
}

// sentences reads the transcript's sentences (GET .../sentences).
func (a *Adapter) sentences(ctx context.Context, route string) ([]utterance, error) {
	data, err := a.send(ctx, http.MethodGet, route+"/sentences", "", nil)
	if err != nil {
		return nil, err
	}
	var out struct {
		Sentences []utterance `json:"sentences"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, a.badResponse(err)
	}
	return out.Sentences, nil
}

// speakerName numbers AssemblyAI's speaker letters as the gateway's
// other providers do: "A" is speaker_1.
func speakerName(label string) string {
	if len(label) == 1 && label[0] >= 'A' && label[0] <= 'Z' {
		return fmt.Sprintf("speaker_%d", label[0]-'A'+1)
	}
	return "speaker_" + label
}

// languageCode is AssemblyAI's code for a job's language: the base
// language ("en"), or en_us, en_uk and en_au for those variants; "" to
// detect the language.
func languageCode(lang string) string {
	if lang == "" || lang == "auto" {
		return ""
	}
	tag, err := language.Parse(lang)
	if err != nil {
		return ""
	}
	base, _ := tag.Base()
	if region, conf := tag.Region(); base.String() == "en" && conf == language.Exact {
		switch region.String() {
		case "US", "GB", "AU":
			r := strings.ToLower(region.String())
			if r == "gb" {
				r = "uk"
			}
			return "en_" + r
		}
	}
	return base.String()
}

// bcp47 turns AssemblyAI's language code ("en_us") into a BCP 47 one.
func bcp47(code string) string {
	if code == "" {
		return ""
	}
	base, region, found := strings.Cut(code, "_")
	if !found {
		return strings.ToLower(base)
	}
	if region == "uk" {
		region = "gb"
	}
	return strings.ToLower(base) + "-" + strings.ToUpper(region)
}

// send performs one request and returns a 2xx body. 429 and 5xx are
// retryable (honouring Retry-After), other 4xx permanent, with
// AssemblyAI's message. The key is never part of an error.
func (a *Adapter) send(ctx context.Context, method, route, contentType string, body io.Reader) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.baseURL+route, body)
	if err != nil {
		return nil, err
	}
	if f, ok := body.(*os.File); ok {
		if info, err := f.Stat(); err == nil {
			req.ContentLength = info.Size()
		}
	}
	req.Header.Set("Authorization", a.key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	data, answer, err := vendorhttp.Send(ctx, a.client, a.provider.ID, req)
	if err != nil || answer == nil {
		return data, err
	}
	var vendor struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(answer.Body, &vendor)
	return nil, answer.Error(a.provider.ID, vendor.Error)
}

// refused is AssemblyAI's verdict that it cannot transcribe the audio.
func (a *Adapter) refused(reason string) error {
	return providers.Permanent(jobs.CodeProviderRejected,
		fmt.Sprintf("provider %q could not transcribe the audio: %s", a.provider.ID, reason), nil)
}

func (a *Adapter) badResponse(err error) error {
	return providers.Permanent(jobs.CodeBadResponse, fmt.Sprintf("provider %q sent an answer AssemblyAI's API does not send", a.provider.ID), err)
}
