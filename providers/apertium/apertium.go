// Package apertium is the "apertium" adapter: translations through an
// Apertium APy server, the rule-based translator that runs locally with
// no account and no network (docs/providers.md, apertium). It uses APy's
// public HTTP API: /listPairs, /translate and /translateDoc.
package apertium

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/language"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/providers/internal/settings"
	"github.com/ai-job-gateway/gateway/providers/internal/usage"
	"github.com/ai-job-gateway/gateway/providers/internal/vendorhttp"
)

// Settings are the apertium adapter's provider settings.
type Settings struct {
	// BaseURL is the APy server, e.g. http://127.0.0.1:2737.
	BaseURL string `json:"base_url"`
}

// Adapter translates through one APy server.
type Adapter struct {
	provider *providers.Provider
	baseURL  string
	client   *http.Client
}

// New builds the adapter of p (see providers.Option); it needs no key.
func New(p *providers.Provider, opts ...providers.Option) (*Adapter, error) {
	o := providers.NewOptions(opts...)
	var s Settings
	if err := settings.Decode(p.Settings, &s); err != nil {
		return nil, err
	}
	baseURL, err := settings.BaseURL(s.BaseURL, "http://127.0.0.1:2737 (the APy server)")
	if err != nil {
		return nil, err
	}
	return &Adapter{provider: p, baseURL: baseURL, client: o.Client(5 * time.Minute)}, nil
}

// Pair is a translation direction in the gateway's language codes.
type Pair struct{ Source, Target string }

// Pairs asks the server at baseURL which directions it translates, in the
// gateway's codes ("en", "es", "en-US"): the capability's source and
// target languages come from it, and a server that answers is ready.
func Pairs(ctx context.Context, client *http.Client, baseURL string) ([]Pair, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(baseURL, "/")+"/listPairs", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("apertium: the APy server at %s is not reachable: %w", baseURL, err)
	}
	defer resp.Body.Close()
	var list struct {
		ResponseData []struct {
			SourceLanguage string `json:"sourceLanguage"`
			TargetLanguage string `json:"targetLanguage"`
		} `json:"responseData"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("apertium: /listPairs answered %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("apertium: /listPairs: %w", err)
	}
	var pairs []Pair
	for _, p := range list.ResponseData {
		source, sok := gatewayCode(p.SourceLanguage)
		target, tok := gatewayCode(p.TargetLanguage)
		if sok && tok {
			pairs = append(pairs, Pair{source, target})
		}
	}
	return pairs, nil
}

// gatewayCode turns an APy code (ISO 639-3, with an optional variant:
// "eng", "eng_US") into the gateway's ("en", "en-US").
func gatewayCode(apy string) (string, bool) {
	base, region, _ := strings.Cut(apy, "_")
	tag, err := language.Parse(base)
	if err != nil {
		return "", false
	}
	b, _ := tag.Base()
	code := b.String()
	if region != "" {
		code += "-" + region
	}
	return code, true
}

// apyCode turns a gateway code ("en", "pt-BR") into APy's ("eng",
// "por_BR").
func apyCode(code string) (string, error) {
	tag, err := language.Parse(code)
	if err != nil {
		return "", err
	}
	b, _ := tag.Base()
	out := b.ISO3()
	if r, conf := tag.Region(); conf == language.Exact {
		out += "_" + r.String()
	}
	return out, nil
}

// Services are translations.
func (a *Adapter) Services() []jobs.ServiceID { return []jobs.ServiceID{jobs.Translations} }

// VendorRetention is PurgeNotRetained: APy translates in memory and keeps
// nothing of a call (docs/providers.md, Deleting a job's vendor copy).
func (a *Adapter) VendorRetention() providers.PurgeOutcome { return providers.PurgeNotRetained }

// Run translates the job's text or document.
func (a *Adapter) Run(ctx context.Context, call providers.Call) (json.RawMessage, error) {
	var in jobs.TranslationInput
	var opts jobs.TranslationOptions
	if err := call.Decode(&in, &opts); err != nil {
		return nil, err
	}
	if opts.Formality == "formal" || opts.Formality == "informal" {
		return nil, providers.Permanent(jobs.CodeUnsupportedOption, "apertium has no formality setting", nil)
	}
	if opts.SourceLanguage == "" || opts.SourceLanguage == "auto" {
		return nil, providers.Permanent(jobs.CodeUnsupportedOption,
			"apertium does not detect the source language: give options.source_language", nil)
	}
	source, err := apyCode(opts.SourceLanguage)
	if err != nil {
		return nil, providers.InputError(jobs.CodeInvalidInput, fmt.Sprintf("options.source_language %q is not a language code", opts.SourceLanguage), err)
	}
	target, err := apyCode(in.TargetLanguage)
	if err != nil {
		return nil, providers.InputError(jobs.CodeInvalidInput, fmt.Sprintf("input.target_language %q is not a language code", in.TargetLanguage), err)
	}
	pair := source + "|" + target
	call.Progress(0)
	res := jobs.TranslationResult{SourceLanguage: opts.SourceLanguage, TargetLanguage: in.TargetLanguage}
	switch in.Type {
	case "text":
		if res.Content, err = a.translate(ctx, pair, in.Content); err != nil {
			return nil, err
		}
		res.CharacterCount = utf8.RuneCountInString(in.Content)
	case "document":
		if call.Media == nil || call.ResultFile == "" {
			return nil, providers.Permanent(jobs.CodeUnsupportedInput,
				"the apertium adapter translates the document the gateway's media stage fetched, and this job has none", nil)
		}
		if res.CharacterCount, err = a.translateDoc(ctx, pair, call.Media, call.ResultFile); err != nil {
			return nil, err
		}
	default:
		return nil, providers.InputError(jobs.CodeInvalidInput, fmt.Sprintf("input.type %q is not text or document", in.Type), nil)
	}
	if opts.IncludeUsage {
		res.Usage = usage.New(-1, -1, usage.Cost(call.Capability().Pricing, usage.Metered{Characters: res.CharacterCount, Pages: 1}))
	}
	call.Progress(100)
	return json.Marshal(res)
}

// translate posts text to /translate.
func (a *Adapter) translate(ctx context.Context, pair, text string) (string, error) {
	form := url.Values{"langpair": {pair}, "q": {text}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.baseURL+"/translate", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	body, err := a.send(ctx, req)
	if err != nil {
		return "", err
	}
	var out struct {
		ResponseData struct {
			TranslatedText string `json:"translatedText"`
		} `json:"responseData"`
		ResponseStatus int `json:"responseStatus"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.ResponseStatus != http.StatusOK {
		return "", providers.Permanent(jobs.CodeBadResponse, fmt.Sprintf("provider %q sent an answer APy does not send", a.provider.ID), err)
	}
	return out.ResponseData.TranslatedText, nil
}

// translateDoc uploads the document to /translateDoc and writes the
// translation to dst; it returns the characters of a text document (the
// bytes of any other).
func (a *Adapter) translateDoc(ctx context.Context, pair string, doc *providers.Media, dst string) (int, error) {
	src, err := os.ReadFile(doc.Path)
	if err != nil {
		return 0, fmt.Errorf("apertium: read the document: %w", err)
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	_ = w.WriteField("langpair", pair)
	part, err := w.CreateFormFile("file", "document"+filepath.Ext(doc.Path))
	if err == nil {
		_, err = part.Write(src)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return 0, fmt.Errorf("apertium: build the upload: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.baseURL+"/translateDoc", &body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	translated, err := a.send(ctx, req)
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(dst, translated, 0o600); err != nil {
		return 0, fmt.Errorf("apertium: write the translation: %w", err)
	}
	if utf8.Valid(src) {
		return utf8.RuneCount(src), nil
	}
	return len(src), nil
}

// send performs req and returns a 2xx body; failures are classified: the
// server unreachable or 5xx retryable, APy's 400 (a pair not installed, a
// document type it cannot read) permanent with its explanation.
func (a *Adapter) send(ctx context.Context, req *http.Request) ([]byte, error) {
	body, answer, err := vendorhttp.Send(ctx, a.client, a.provider.ID, req)
	if err != nil || answer == nil {
		return body, err
	}
	var apyErr struct {
		Explanation string `json:"explanation"`
	}
	_ = json.Unmarshal(answer.Body, &apyErr)
	msg := fmt.Sprintf("provider %q answered %d", a.provider.ID, answer.Status)
	if apyErr.Explanation != "" {
		msg += ": " + apyErr.Explanation
	}
	var e *providers.Error
	switch {
	case answer.Status >= 500 || answer.Status == http.StatusTooManyRequests:
		e = providers.Retryable(jobs.CodeProviderUnavailable, msg, nil)
	case strings.Contains(apyErr.Explanation, "Invalid file type"):
		e = providers.Permanent(jobs.CodeUnsupportedInput, msg, nil)
	default:
		e = providers.Permanent(jobs.CodeProviderRejected, msg, nil)
	}
	e.StatusCode = answer.Status
	return nil, e
}

// errNoPairs: a server with no pair can translate nothing.
var errNoPairs = errors.New("apertium: the APy server has no language pair installed")

// Languages are the capability's source and target languages from the
// server's pairs; an error when it has none.
func Languages(pairs []Pair) (sources, targets []string, err error) {
	for _, p := range pairs {
		if !slices.Contains(sources, p.Source) {
			sources = append(sources, p.Source)
		}
		if !slices.Contains(targets, p.Target) {
			targets = append(targets, p.Target)
		}
	}
	if len(pairs) == 0 {
		return nil, nil, errNoPairs
	}
	slices.Sort(sources)
	slices.Sort(targets)
	return sources, targets, nil
}
