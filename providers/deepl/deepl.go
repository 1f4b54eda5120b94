// Package deepl is the "deepl" adapter: translations through the DeepL API
// v2 (docs/providers.md, deepl): text with POST /translate, documents with
// the document API (upload, status, download).
package deepl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/internal/settings"
	"github.com/ai-job-gateway/gateway/providers/internal/usage"
	"github.com/ai-job-gateway/gateway/providers/internal/vendorhttp"
)

// Settings are the deepl adapter's provider settings.
type Settings struct {
	// API: base_url is the API root, https://api.deepl.com/v2 (default) or
	// https://api-free.deepl.com/v2 for free accounts; api_key_env names
	// the environment variable holding the auth key.
	settings.API
}

// Adapter calls the DeepL API.
type Adapter struct {
	provider *providers.Provider
	baseURL  string
	key      string
	client   *http.Client
	// poll is the first wait between document status checks; it doubles
	// up to 10 s.
	poll time.Duration
}

// New builds the adapter of p (see providers.Option).
func New(p *providers.Provider, opts ...providers.Option) (*Adapter, error) {
	o := providers.NewOptions(opts...)
	s := Settings{API: settings.API{BaseURL: "https://api.deepl.com/v2"}}
	if err := settings.Decode(p.Settings, &s); err != nil {
		return nil, err
	}
	baseURL, key, err := s.Open("https://api.deepl.com/v2", "DEEPL_AUTH_KEY", o.LookupEnv)
	if err != nil {
		return nil, err
	}
	return &Adapter{provider: p, baseURL: baseURL, key: key,
		client: o.Client(5 * time.Minute), poll: o.Poll(time.Second)}, nil
}

// targetCode is DeepL's target language code: uppercase, with the
// variants DeepL requires for English and Portuguese (plain "en" is
// American English, plain "pt" European Portuguese).
func targetCode(code string) string {
	c := strings.ToUpper(code)
	switch c {
	case "EN":
		return "EN-US"
	case "PT":
		return "PT-PT"
	}
	return c
}

// sourceCode is DeepL's source language code: uppercase, without a
// variant (DeepL's source languages have none); "" to detect it.
func sourceCode(code string) string {
	if code == "" || code == "auto" {
		return ""
	}
	base, _, _ := strings.Cut(code, "-")
	return strings.ToUpper(base)
}

// formalities maps the job's formality to DeepL's. The prefer_ forms fall
// back to the default for languages without formality instead of failing.
var formalities = map[string]string{"formal": "prefer_more", "informal": "prefer_less"}

// Services are translations.
func (a *Adapter) Services() []jobs.ServiceID { return []jobs.ServiceID{jobs.Translations} }

// VendorRetention is PurgeNotRetained: DeepL removes a document once its
// translation is downloaded, which Run does before it returns, and does
// not store the texts of API calls; it has no delete endpoint to call
// (docs/providers.md, Deleting a job's vendor copy, with DeepL's own
// words and their limits).
func (a *Adapter) VendorRetention() providers.PurgeOutcome { return providers.PurgeNotRetained }

// Run translates the job's text or document.
func (a *Adapter) Run(ctx context.Context, call providers.Call) (json.RawMessage, error) {
	var in jobs.TranslationInput
	var opts jobs.TranslationOptions
	if err := call.Decode(&in, &opts); err != nil {
		return nil, err
	}
	call.Progress(0)
	res := jobs.TranslationResult{TargetLanguage: in.TargetLanguage, SourceLanguage: opts.SourceLanguage}
	var err error
	switch in.Type {
	case "text":
		err = a.translateText(ctx, in, opts, &res)
	case "document":
		if call.Media == nil || call.ResultFile == "" {
			return nil, providers.Permanent(jobs.CodeUnsupportedInput,
				"the deepl adapter translates the document the gateway's media stage fetched, and this job has none", nil)
		}
		err = a.translateDocument(ctx, call, in, opts, &res)
	default:
		err = providers.InputError(jobs.CodeInvalidInput, fmt.Sprintf("input.type %q is not text or document", in.Type), nil)
	}
	if err != nil {
		return nil, err
	}
	if opts.IncludeUsage {
		res.Usage = usage.New(-1, -1, usage.Cost(call.Capability().Pricing, usage.Metered{Characters: res.CharacterCount, Pages: 1}))
	}
	call.Progress(100)
	return json.Marshal(res)
}

type translateRequest struct {
	Text       []string `json:"text"`
	TargetLang string   `json:"target_lang"`
	SourceLang string   `json:"source_lang,omitempty"`
	Formality  string   `json:"formality,omitempty"`
}

func (a *Adapter) translateText(ctx context.Context, in jobs.TranslationInput, opts jobs.TranslationOptions, res *jobs.TranslationResult) error {
	body, err := json.Marshal(translateRequest{Text: []string{in.Content}, TargetLang: targetCode(in.TargetLanguage),
		SourceLang: sourceCode(opts.SourceLanguage), Formality: formalities[opts.Formality]})
	if err != nil {
		return err
	}
	req, err := a.request(ctx, "/translate", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	data, err := a.send(ctx, req)
	if err != nil {
		return err
	}
	var out struct {
		Translations []struct {
			DetectedSourceLanguage string `json:"detected_source_language"`
			Text                   string `json:"text"`
		} `json:"translations"`
	}
	if err := json.Unmarshal(data, &out); err != nil || len(out.Translations) != 1 {
		return a.badResponse(err)
	}
	res.Content = out.Translations[0].Text
	res.SourceLanguage = strings.ToLower(out.Translations[0].DetectedSourceLanguage)
	res.CharacterCount = utf8.RuneCountInString(in.Content)
	return nil
}

// translateDocument uploads the document, waits for DeepL to translate
// it, and downloads the translation into call.ResultFile.
func (a *Adapter) translateDocument(ctx context.Context, call providers.Call, in jobs.TranslationInput, opts jobs.TranslationOptions, res *jobs.TranslationResult) error {
	doc, err := a.upload(ctx, call.Media, in, opts)
	if err != nil {
		return err
	}
	form := url.Values{"document_key": {doc.Key}}.Encode()
	wait := a.poll
	for {
		req, err := a.request(ctx, "/document/"+url.PathEscape(doc.ID), "application/x-www-form-urlencoded", strings.NewReader(form))
		if err != nil {
			return err
		}
		data, err := a.send(ctx, req)
		if err != nil {
			return err
		}
		var status struct {
			Status           string `json:"status"`
			SecondsRemaining int    `json:"seconds_remaining"`
			BilledCharacters int    `json:"billed_characters"`
			ErrorMessage     string `json:"error_message"`
		}
		if err := json.Unmarshal(data, &status); err != nil {
			return a.badResponse(err)
		}
		switch status.Status {
		case "done":
			res.CharacterCount = status.BilledCharacters
			return a.download(ctx, doc, form, call.ResultFile)
		case "error":
			return providers.Permanent(jobs.CodeProviderRejected,
				fmt.Sprintf("provider %q could not translate the document: %s", a.provider.ID, status.ErrorMessage), nil)
		case "queued", "translating":
			if status.Status == "translating" {
				call.Progress(50)
			} else {
				call.Progress(10)
			}
		default:
			return a.badResponse(fmt.Errorf("document status %q", status.Status))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
}

type document struct {
	ID  string `json:"document_id"`
	Key string `json:"document_key"`
}

func (a *Adapter) upload(ctx context.Context, media *providers.Media, in jobs.TranslationInput, opts jobs.TranslationOptions) (document, error) {
	var doc document
	f, err := os.Open(media.Path)
	if err != nil {
		return doc, fmt.Errorf("deepl: open the document: %w", err)
	}
	defer f.Close()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	_ = w.WriteField("target_lang", targetCode(in.TargetLanguage))
	if src := sourceCode(opts.SourceLanguage); src != "" {
		_ = w.WriteField("source_lang", src)
	}
	if f := formalities[opts.Formality]; f != "" {
		_ = w.WriteField("formality", f)
	}
	part, err := w.CreateFormFile("file", "document"+extension(in.URL))
	if err == nil {
		_, err = io.Copy(part, f)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return doc, fmt.Errorf("deepl: build the upload: %w", err)
	}
	req, err := a.request(ctx, "/document", w.FormDataContentType(), &body)
	if err != nil {
		return doc, err
	}
	data, err := a.send(ctx, req)
	if err != nil {
		return doc, err
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.ID == "" || doc.Key == "" {
		return doc, a.badResponse(err)
	}
	return doc, nil
}

func (a *Adapter) download(ctx context.Context, doc document, form, dst string) error {
	req, err := a.request(ctx, "/document/"+url.PathEscape(doc.ID)+"/result", "application/x-www-form-urlencoded", strings.NewReader(form))
	if err != nil {
		return err
	}
	data, err := a.send(ctx, req)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o600)
}

// extension is the file extension of the document's URL, which DeepL
// reads the format from.
func extension(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return strings.ToLower(path.Ext(u.Path))
}

func (a *Adapter) request(ctx context.Context, route, contentType string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.baseURL+route, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "DeepL-Auth-Key "+a.key)
	req.Header.Set("Content-Type", contentType)
	return req, nil
}

// send performs req and returns a 2xx body. 429 and 5xx are retryable
// (honouring Retry-After); 456 (quota exceeded) and other 4xx permanent,
// with DeepL's message. The key is never part of an error.
func (a *Adapter) send(ctx context.Context, req *http.Request) ([]byte, error) {
	data, answer, err := vendorhttp.Send(ctx, a.client, a.provider.ID, req)
	if err != nil || answer == nil {
		return data, err
	}
	resp := answer
	var body struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(resp.Body, &body)
	detail := body.Message
	if resp.Status == 456 {
		detail = strings.TrimSuffix("the account's character quota is used up: "+detail, ": ")
	}
	return nil, resp.Error(a.provider.ID, detail)
}

func (a *Adapter) badResponse(err error) error {
	return providers.Permanent(jobs.CodeBadResponse, fmt.Sprintf("provider %q sent an answer DeepL's API does not send", a.provider.ID), err)
}
