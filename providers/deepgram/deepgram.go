// Package deepgram is the "deepgram" adapter: transcriptions through
// Deepgram's pre-recorded API, POST /v1/listen (docs/providers.md,
// deepgram). Deepgram answers a pre-recorded request in the same HTTP
// exchange, so the call is one heartbeating activity; when the gateway
// takes vendor callbacks, NewWithCallbacks's adapter asks Deepgram to post
// the result back instead, and no worker waits for it.
package deepgram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Settings are the deepgram adapter's provider settings.
type Settings struct {
	// API: base_url is the API root, https://api.deepgram.com (default);
	// api_key_env names the environment variable holding the API key.
	settings.API
	// Model is Deepgram's model, nova-3 by default.
	Model string `json:"model"`
	// CallbackTimeoutMinutes is how long to wait for Deepgram's callback
	// before failing over (callback mode only); 30 by default.
	CallbackTimeoutMinutes int `json:"callback_timeout_minutes"`
}

// Adapter calls the Deepgram API.
type Adapter struct {
	provider *providers.Provider
	baseURL  string
	key      string
	model    string
	client   *http.Client
	// callbackTimeout bounds the wait for a callback.
	callbackTimeout time.Duration
}

// New builds the adapter of p (see providers.Option).
func New(p *providers.Provider, opts ...providers.Option) (*Adapter, error) {
	o := providers.NewOptions(opts...)
	s := Settings{API: settings.API{BaseURL: "https://api.deepgram.com"}, Model: "nova-3", CallbackTimeoutMinutes: defaultCallbackTimeoutMinutes}
	if err := settings.Decode(p.Settings, &s); err != nil {
		return nil, err
	}
	if s.CallbackTimeoutMinutes <= 0 {
		return nil, errors.New("settings: callback_timeout_minutes must be a whole number of at least 1")
	}
	baseURL, key, err := s.Open("https://api.deepgram.com", "DEEPGRAM_API_KEY", o.LookupEnv)
	if err != nil {
		return nil, err
	}
	// Deepgram processes an hour of audio in well under a minute; its
	// own limit on a request is 10 minutes.
	return &Adapter{provider: p, baseURL: baseURL, key: key, model: s.Model,
		client: o.Client(11 * time.Minute), callbackTimeout: time.Duration(s.CallbackTimeoutMinutes) * time.Minute}, nil
}

// defaultCallbackTimeoutMinutes: Deepgram caps a request at 10 minutes
// and retries a callback it could not deliver for a while after.
const defaultCallbackTimeoutMinutes = 30

// listenResponse is Deepgram's pre-recorded answer, as far as the gateway
// reads it. Times are in seconds.
type listenResponse struct {
	Metadata struct {
		RequestID string  `json:"request_id"`
		Duration  float64 `json:"duration"`
	} `json:"metadata"`
	Results struct {
		Channels []struct {
			DetectedLanguage string `json:"detected_language"`
			Alternatives     []struct {
				Transcript string  `json:"transcript"`
				Confidence float64 `json:"confidence"`
			} `json:"alternatives"`
		} `json:"channels"`
		Utterances []struct {
			Start      float64 `json:"start"`
			End        float64 `json:"end"`
			Confidence float64 `json:"confidence"`
			Transcript string  `json:"transcript"`
			Speaker    *int    `json:"speaker"`
			Words      []struct {
				Word           string  `json:"word"`
				PunctuatedWord string  `json:"punctuated_word"`
				Start          float64 `json:"start"`
				End            float64 `json:"end"`
				Confidence     float64 `json:"confidence"`
			} `json:"words"`
		} `json:"utterances"`
	} `json:"results"`
}

// Services are transcriptions.
func (a *Adapter) Services() []jobs.ServiceID { return []jobs.ServiceID{jobs.Transcriptions} }

// VendorRetention is PurgeNoAPI: Deepgram retains requests sent without
// mip_opt_out (the adapter sends none) for its Model Improvement Program,
// and has no API to delete them (docs/providers.md, Deleting a job's
// vendor copy).
func (a *Adapter) VendorRetention() providers.PurgeOutcome { return providers.PurgeNoAPI }

// Run sends the audio the media stage extracted and maps the answer.
func (a *Adapter) Run(ctx context.Context, call providers.Call) (json.RawMessage, error) {
	opts, req, err := a.listenRequest(ctx, call, "")
	if err != nil {
		return nil, err
	}
	defer req.Body.Close()
	call.Progress(0)
	data, err := a.send(ctx, req)
	if err != nil {
		return nil, err
	}
	res, err := a.result(data, call, opts)
	if err != nil {
		return nil, err
	}
	call.Progress(100)
	return res, nil
}

// listenRequest checks the call and builds its POST /v1/listen, with the
// audio file as the body (the caller closes it) and Deepgram's callback
// when callback is set.
func (a *Adapter) listenRequest(ctx context.Context, call providers.Call, callback string) (jobs.TranscriptionOptions, *http.Request, error) {
	var in jobs.TranscriptionInput
	var opts jobs.TranscriptionOptions
	if err := call.Decode(&in, &opts); err != nil {
		return opts, nil, err
	}
	if call.Media == nil {
		return opts, nil, providers.Permanent(jobs.CodeUnsupportedInput,
			"the deepgram adapter sends the audio the gateway's media stage extracted, and this job has none", nil)
	}
	if limit := call.Capability().Limits.MaxFileSizeMB; limit > 0 && call.Media.Size > int64(limit)<<20 {
		return opts, nil, providers.Permanent(jobs.CodeFileTooLarge,
			fmt.Sprintf("the extracted audio (%d MB) is larger than the %d MB provider %q accepts", call.Media.Size>>20, limit, a.provider.ID), nil)
	}
	f, err := os.Open(call.Media.Path)
	if err != nil {
		return opts, nil, fmt.Errorf("deepgram: open the audio: %w", err)
	}
	q := a.query(opts)
	if callback != "" {
		q.Set("callback", callback)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.baseURL+"/v1/listen?"+q.Encode(), f)
	if err != nil {
		_ = f.Close()
		return opts, nil, err
	}
	req.ContentLength = call.Media.Size
	req.Header.Set("Authorization", "Token "+a.key)
	req.Header.Set("Content-Type", call.Media.ContentType)
	return opts, req, nil
}

// result maps Deepgram's transcription (an answer or a callback's body)
// to the job's result.
func (a *Adapter) result(data []byte, call providers.Call, opts jobs.TranscriptionOptions) (json.RawMessage, error) {
	var answer listenResponse
	if err := json.Unmarshal(data, &answer); err != nil || len(answer.Results.Channels) == 0 || len(answer.Results.Channels[0].Alternatives) == 0 {
		return nil, a.badResponse(err)
	}
	channel := answer.Results.Channels[0]
	res := jobs.TranscriptionResult{Format: opts.EffectiveFormat(), Duration: answer.Metadata.Duration,
		Language: opts.Language, Text: channel.Alternatives[0].Transcript}
	if res.Language == "" || res.Language == "auto" {
		res.Language = channel.DetectedLanguage
	}
	if opts.WantsTimestamps() || opts.WantsDiarization() {
		for _, u := range answer.Results.Utterances {
			confidence := u.Confidence
			seg := jobs.Segment{Start: u.Start, End: u.End, Text: strings.TrimSpace(u.Transcript), Confidence: &confidence}
			if u.Speaker != nil && opts.WantsDiarization() {
				seg.Speaker = fmt.Sprintf("speaker_%d", *u.Speaker+1)
			}
			if opts.WantsTimestamps() {
				for _, w := range u.Words {
					text := w.PunctuatedWord // smart_format's, as in the transcript
					if text == "" {
						text = w.Word
					}
					confidence := w.Confidence
					seg.Words = append(seg.Words, jobs.Word{Start: w.Start, End: w.End, Text: text, Confidence: &confidence})
				}
			}
			res.Segments = append(res.Segments, seg)
		}
	}
	if opts.IncludeUsage {
		res.Usage = usage.New(-1, -1, usage.Cost(call.Capability().Pricing, usage.Metered{Minutes: answer.Metadata.Duration / 60, Pages: 1}))
	}
	return json.Marshal(res)
}

// query is the request's options: the model, punctuation and formatting,
// utterances for the segments, speakers when asked, and the language or
// its detection.
func (a *Adapter) query(opts jobs.TranscriptionOptions) url.Values {
	q := url.Values{"model": {a.model}, "smart_format": {"true"}, "punctuate": {"true"}, "utterances": {"true"}}
	if opts.WantsDiarization() {
		q.Set("diarize", "true")
	}
	if lang := opts.Language; lang != "" && lang != "auto" {
		if tag, err := language.Parse(lang); err == nil {
			lang = tag.String()
		}
		q.Set("language", lang)
	} else {
		q.Set("detect_language", "true")
	}
	return q
}

// send performs req and returns a 2xx body. 429 and 5xx are retryable
// (honouring Retry-After), other 4xx permanent, with Deepgram's err_msg.
// The key is never part of an error.
func (a *Adapter) send(ctx context.Context, req *http.Request) ([]byte, error) {
	data, answer, err := vendorhttp.Send(ctx, a.client, a.provider.ID, req)
	if err != nil || answer == nil {
		return data, err
	}
	var vendor struct {
		Code    string `json:"err_code"`
		Message string `json:"err_msg"`
	}
	_ = json.Unmarshal(answer.Body, &vendor)
	detail := vendor.Message
	if vendor.Code != "" {
		detail += " (" + vendor.Code + ")"
	}
	return nil, answer.Error(a.provider.ID, detail)
}

func (a *Adapter) badResponse(err error) error {
	return providers.Permanent(jobs.CodeBadResponse, fmt.Sprintf("provider %q sent an answer Deepgram's API does not send", a.provider.ID), err)
}

// CallbackAdapter is the adapter in callback mode: Submit asks Deepgram to
// post the result to the call's CallbackURL and returns Deepgram's
// request_id; Check reads what was posted.
type CallbackAdapter struct {
	*Adapter
}

// NewWithCallbacks builds the callback-mode adapter of p; it takes what
// New takes.
func NewWithCallbacks(p *providers.Provider, opts ...providers.Option) (*CallbackAdapter, error) {
	a, err := New(p, opts...)
	if err != nil {
		return nil, err
	}
	return &CallbackAdapter{Adapter: a}, nil
}

// Submit sends the audio with callback= and returns Deepgram's request_id.
func (a *CallbackAdapter) Submit(ctx context.Context, call providers.Call) (string, error) {
	if call.CallbackURL == "" {
		return "", providers.Permanent(jobs.CodeProviderRejected,
			fmt.Sprintf("provider %q posts its results back, and this worker has no callback URL (--callback-url)", a.provider.ID), nil)
	}
	_, req, err := a.listenRequest(ctx, call, call.CallbackURL)
	if err != nil {
		return "", err
	}
	defer req.Body.Close()
	data, err := a.send(ctx, req)
	if err != nil {
		return "", err
	}
	var accepted struct {
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(data, &accepted); err != nil || accepted.RequestID == "" {
		return "", a.badResponse(err)
	}
	return accepted.RequestID, nil
}

// Check maps the callback's body once Deepgram has posted it. A callback
// carrying Deepgram's error fails the call; no callback within
// callback_timeout_minutes of the submit fails it over.
func (a *CallbackAdapter) Check(_ context.Context, call providers.Call, handle string) (providers.Check, error) {
	if call.Callback == nil {
		if !call.Submitted.IsZero() && time.Since(call.Submitted) > a.callbackTimeout {
			return providers.Check{}, providers.Permanent(jobs.CodeProviderUnavailable,
				fmt.Sprintf("provider %q did not post the result of request %s within %s", a.provider.ID, handle, a.callbackTimeout), nil)
		}
		return providers.Check{}, nil
	}
	var failure struct {
		Code    string          `json:"err_code"`
		Message string          `json:"err_msg"`
		Results json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(call.Callback, &failure); err == nil && failure.Results == nil && (failure.Message != "" || failure.Code != "") {
		return providers.Check{}, providers.Permanent(jobs.CodeProviderRejected,
			fmt.Sprintf("provider %q could not transcribe the audio: %s (%s)", a.provider.ID, failure.Message, failure.Code), nil)
	}
	var in jobs.TranscriptionInput
	var opts jobs.TranscriptionOptions
	if err := call.Decode(&in, &opts); err != nil {
		return providers.Check{}, err
	}
	res, err := a.result(call.Callback, call, opts)
	if err != nil {
		return providers.Check{}, err
	}
	return providers.Check{Done: true, Result: res}, nil
}
