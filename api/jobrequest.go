package api

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"golang.org/x/text/language"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/providers"
)

// jobRequest is a validated job creation request.
type jobRequest struct {
	Input      json.RawMessage
	Options    json.RawMessage
	Webhook    *webhook
	Provider   string
	PolicyID   string
	ClientMeta json.RawMessage
}

// webhook is attributes.webhook of a create request.
type webhook struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

const (
	ptrData       = "/data"
	ptrAttributes = "/data/attributes"
	ptrInput      = "/data/attributes/input"
	ptrOptions    = "/data/attributes/options"
	ptrWebhook    = "/data/attributes/webhook"
)

// Size limits of a job's parts. A job travels through Temporal (workflow
// input, and with its result in every webhook event), whose payloads are
// limited to 2 MiB, so inline input stays well below that; larger content
// is given by url.
const (
	MaxInputBytes      = 512 << 10
	MaxClientMetaBytes = 16 << 10
)

// Limits of attributes.webhook (docs/api.md): it travels with the job too.
const (
	MaxWebhookURLBytes         = 2048
	MaxWebhookHeaders          = 20
	MaxWebhookHeaderNameBytes  = 256
	MaxWebhookHeaderValueBytes = 4 << 10
	// MaxWebhookHeadersBytes bounds the names and values together.
	MaxWebhookHeadersBytes = 8 << 10
)

var applicationPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,61}[a-z0-9]$`)

// validApplication checks the X-Application header.
func validApplication(app string) *apierror.Error {
	if app == "" || applicationPattern.MatchString(app) {
		return nil
	}
	return apierror.New(422, apierror.CodeValidation,
		"header X-Application: must be 2 to 63 characters of lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen (pattern ^[a-z][a-z0-9-]{0,61}[a-z0-9]$)")
}

// parseJobRequest decodes and validates a create request for service.
func parseJobRequest(service providers.Service, body []byte) (*jobRequest, *apierror.Error) {
	data, err := dataMember(body, "type", "attributes", "meta")
	if err != nil {
		return nil, err
	}
	jobType, ok, err := stringMember(data, "type", ptrData)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierror.Validation(ptrData+"/type", "is required and must be %q", service.JobType)
	}
	if jobType != service.JobType {
		return nil, apierror.Validation(ptrData+"/type", "must be %q for %s, not %q", service.JobType, service.Endpoint(), jobType)
	}

	req := &jobRequest{}
	if err := parseMeta(data["meta"], req); err != nil {
		return nil, err
	}
	attrs, err := object(data["attributes"], ptrAttributes)
	if err != nil {
		return nil, err
	}
	if attrs == nil {
		return nil, apierror.Validation(ptrAttributes, "is required")
	}
	if err := onlyKeys(attrs, ptrAttributes, "input", "options", "webhook", "provider", "policy_id"); err != nil {
		return nil, err
	}
	if isAbsent(attrs["input"]) {
		return nil, apierror.Validation(ptrInput, "is required")
	}
	if err := validateJobSpec(service.ID, attrs["input"], attrs["options"]); err != nil {
		return nil, err
	}
	req.Input = compact(attrs["input"])
	if len(req.Input) > MaxInputBytes {
		return nil, apierror.Validation(ptrInput, "is %d bytes; inline input is limited to %d KiB (give larger texts as a document by url)", len(req.Input), MaxInputBytes>>10)
	}
	if !isAbsent(attrs["options"]) {
		req.Options = compact(attrs["options"])
	}
	if req.Webhook, err = parseWebhook(attrs["webhook"]); err != nil {
		return nil, err
	}
	if req.Provider, _, err = stringMember(attrs, "provider", ptrAttributes); err != nil {
		return nil, err
	}
	if _, given := attrs["provider"]; given && !isAbsent(attrs["provider"]) && req.Provider == "" {
		return nil, apierror.Validation(ptrAttributes+"/provider", "must not be empty")
	}
	if req.PolicyID, _, err = stringMember(attrs, "policy_id", ptrAttributes); err != nil {
		return nil, err
	}
	if req.PolicyID != "" {
		if _, perr := uuid.Parse(req.PolicyID); perr != nil || len(req.PolicyID) != 36 {
			return nil, apierror.Validation(ptrAttributes+"/policy_id", "must be a UUID")
		}
	}
	if req.Provider != "" && req.PolicyID != "" {
		return nil, apierror.Unprocessable(apierror.CodeProviderAndPolicy,
			"%s/provider and %s/policy_id exclude each other: name a provider or a policy, not both", ptrAttributes, ptrAttributes)
	}
	return req, nil
}

func parseMeta(raw json.RawMessage, req *jobRequest) *apierror.Error {
	meta, err := object(raw, ptrData+"/meta")
	if err != nil || meta == nil {
		return err
	}
	if err := onlyKeys(meta, ptrData+"/meta", "client"); err != nil {
		return err
	}
	client, err := object(meta["client"], ptrData+"/meta/client")
	if err != nil {
		return err
	}
	if client != nil {
		req.ClientMeta = compact(meta["client"])
		if len(req.ClientMeta) > MaxClientMetaBytes {
			return apierror.Validation(ptrData+"/meta/client", "is %d bytes; it is limited to %d KiB", len(req.ClientMeta), MaxClientMetaBytes>>10)
		}
	}
	return nil
}

var reservedWebhookHeaders = []string{"content-type", "content-length", "host", "user-agent", "webhook-id", "webhook-timestamp", "webhook-signature", "transfer-encoding", "connection"}

func parseWebhook(raw json.RawMessage) (*webhook, *apierror.Error) {
	if isAbsent(raw) {
		return nil, nil
	}
	// Check header values one by one, so an error names the header.
	if members, err := object(raw, ptrWebhook); err != nil {
		return nil, err
	} else if headers, err := object(members["headers"], ptrWebhook+"/headers"); err != nil {
		return nil, err
	} else {
		if len(headers) > MaxWebhookHeaders {
			return nil, apierror.Validation(ptrWebhook+"/headers", "has %d headers; at most %d are allowed", len(headers), MaxWebhookHeaders)
		}
		for name := range headers {
			if _, _, err := stringMember(headers, name, ptrWebhook+"/headers"); err != nil {
				return nil, err
			}
		}
	}
	var w webhook
	if err := decodeStrict(raw, ptrWebhook, &w); err != nil {
		return nil, err
	}
	if w.URL == "" {
		return nil, apierror.Validation(ptrWebhook+"/url", "is required")
	}
	if len(w.URL) > MaxWebhookURLBytes {
		return nil, apierror.Validation(ptrWebhook+"/url", "is %d bytes; it is limited to %d", len(w.URL), MaxWebhookURLBytes)
	}
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, apierror.Validation(ptrWebhook+"/url", "must be an absolute http or https URL")
	}
	if u.User != nil {
		return nil, apierror.Validation(ptrWebhook+"/url", "must not carry credentials; send them in webhook.headers")
	}
	total := 0
	for _, name := range slices.Sorted(maps.Keys(w.Headers)) {
		pointer := ptrWebhook + "/headers/" + escapePointer(name)
		value := w.Headers[name]
		if name == "" || strings.ContainsAny(name, " \t\r\n:") {
			return nil, apierror.Validation(pointer, "is not a valid header name")
		}
		if len(name) > MaxWebhookHeaderNameBytes {
			return nil, apierror.Validation(pointer, "has a name of %d bytes; header names are limited to %d", len(name), MaxWebhookHeaderNameBytes)
		}
		if contains(reservedWebhookHeaders, strings.ToLower(name)) {
			return nil, apierror.Validation(pointer, "is set by the gateway and cannot be overridden")
		}
		if len(value) > MaxWebhookHeaderValueBytes {
			return nil, apierror.Validation(pointer, "is %d bytes; header values are limited to %d KiB", len(value), MaxWebhookHeaderValueBytes>>10)
		}
		if strings.ContainsAny(value, "\r\n") {
			return nil, apierror.Validation(pointer, "must not contain line breaks")
		}
		total += len(name) + len(value)
	}
	if total > MaxWebhookHeadersBytes {
		return nil, apierror.Validation(ptrWebhook+"/headers", "are %d bytes (names and values); they are limited to %d KiB together", total, MaxWebhookHeadersBytes>>10)
	}
	return &w, nil
}

// validateJobSpec checks a service's input and options.
func validateJobSpec(service providers.ServiceID, input, options json.RawMessage) *apierror.Error {
	switch service {
	case providers.Transcriptions:
		in, opts, err := decodeSpec[providers.TranscriptionInput, providers.TranscriptionOptions](input, options)
		if err != nil {
			return err
		}
		return firstError(
			oneOf(in.Type, ptrInput+"/type", true, "video", "audio"),
			mediaURL(in.URL, ptrInput+"/url", true),
			nonNegative(in.AudioTrack, ptrInput+"/audio_track"),
			languageCode(opts.Language, ptrOptions+"/language", false),
			oneOf(opts.Format, ptrOptions+"/format", false, "srt", "vtt", "json"),
			oneOf(opts.Priority, ptrOptions+"/priority", false, "low", "standard", "high"),
		)
	case providers.Translations:
		in, opts, err := decodeSpec[providers.TranslationInput, providers.TranslationOptions](input, options)
		if err != nil {
			return err
		}
		return firstError(
			oneOf(in.Type, ptrInput+"/type", true, "text", "document"),
			requiredWhen(in.Type == "text", in.Content, ptrInput+"/content", "when type is text"),
			forbiddenWhen(in.Type == "text", in.URL, ptrInput+"/url", "when type is text; use content"),
			requiredWhen(in.Type == "document", in.URL, ptrInput+"/url", "when type is document"),
			forbiddenWhen(in.Type == "document", in.Content, ptrInput+"/content", "when type is document; use url"),
			mediaURL(in.URL, ptrInput+"/url", false),
			required(in.TargetLanguage, ptrInput+"/target_language"),
			languageCode(in.TargetLanguage, ptrInput+"/target_language", false),
			languageCode(opts.SourceLanguage, ptrOptions+"/source_language", true),
			oneOf(opts.Formality, ptrOptions+"/formality", false, "default", "formal", "informal"),
			oneOf(opts.Priority, ptrOptions+"/priority", false, "low", "standard", "high"),
		)
	case providers.VideoAnalyses:
		in, opts, err := decodeSpec[providers.VideoAnalysisInput, providers.VideoAnalysisOptions](input, options)
		if err != nil {
			return err
		}
		return firstError(
			mediaURL(in.URL, ptrInput+"/url", true),
			videoFeatures(in.Features),
			nonNegative(in.AudioTrack, ptrInput+"/audio_track"),
			languageCode(opts.Language, ptrOptions+"/language", true),
			unitInterval(opts.ConfidenceThreshold, ptrOptions+"/confidence_threshold"),
			oneOf(opts.Priority, ptrOptions+"/priority", false, "low", "standard", "high"),
		)
	case providers.LLMTasks:
		in, opts, err := decodeSpec[providers.LLMTaskInput, providers.LLMTaskOptions](input, options)
		if err != nil {
			return err
		}
		return firstError(
			oneOf(in.Type, ptrInput+"/type", true, "text", "document"),
			requiredWhen(in.Type == "text", in.Text, ptrInput+"/text", "when type is text"),
			forbiddenWhen(in.Type == "text", in.URL, ptrInput+"/url", "when type is text; use text"),
			requiredWhen(in.Type == "document", in.URL, ptrInput+"/url", "when type is document"),
			mediaURL(in.URL, ptrInput+"/url", false),
			required(in.Prompt, ptrInput+"/prompt"),
			oneOf(opts.Creativity, ptrOptions+"/creativity", false, "precise", "balanced", "creative"),
		)
	}
	return apierror.Validation(ptrData+"/type", "unknown service")
}

// decodeSpec decodes a service's input and options strictly.
func decodeSpec[I, O any](input, options json.RawMessage) (I, O, *apierror.Error) {
	var in I
	var opts O
	if err := decodeStrict(input, ptrInput, &in); err != nil {
		return in, opts, err
	}
	err := decodeStrict(options, ptrOptions, &opts)
	return in, opts, err
}

func firstError(errs ...*apierror.Error) *apierror.Error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func required(v, pointer string) *apierror.Error {
	if strings.TrimSpace(v) == "" {
		return apierror.Validation(pointer, "is required")
	}
	return nil
}

func requiredWhen(cond bool, v, pointer, when string) *apierror.Error {
	if cond && strings.TrimSpace(v) == "" {
		return apierror.Validation(pointer, "is required %s", when)
	}
	return nil
}

func forbiddenWhen(cond bool, v, pointer, when string) *apierror.Error {
	if cond && v != "" {
		return apierror.Validation(pointer, "is not allowed %s", when)
	}
	return nil
}

func oneOf(v, pointer string, isRequired bool, allowed ...string) *apierror.Error {
	if v == "" {
		if isRequired {
			return apierror.Validation(pointer, "is required (one of %s)", strings.Join(allowed, ", "))
		}
		return nil
	}
	if !contains(allowed, v) {
		return apierror.Validation(pointer, "must be one of %s, not %q", strings.Join(allowed, ", "), v)
	}
	return nil
}

func mediaURL(v, pointer string, isRequired bool) *apierror.Error {
	if v == "" {
		if isRequired {
			return apierror.Validation(pointer, "is required")
		}
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return apierror.Validation(pointer, "must be an absolute http or https URL")
	}
	return nil
}

func nonNegative(v *int, pointer string) *apierror.Error {
	if v != nil && *v < 0 {
		return apierror.Validation(pointer, "must be a zero-based track number (0 or more)")
	}
	return nil
}

func unitInterval(v *float64, pointer string) *apierror.Error {
	if v != nil && (*v < 0 || *v > 1) {
		return apierror.Validation(pointer, "must be between 0 and 1")
	}
	return nil
}

// languageCode checks a BCP 47 language tag; allowAuto admits "auto".
func languageCode(v, pointer string, allowAuto bool) *apierror.Error {
	if v == "" || (allowAuto && v == "auto") {
		return nil
	}
	// x/text also accepts "en_US"; BCP 47 separates subtags with hyphens.
	if _, err := language.Parse(v); err != nil || strings.Contains(v, "_") {
		if allowAuto {
			return apierror.Validation(pointer, "must be a BCP 47 language code such as en or pt-BR, or auto")
		}
		return apierror.Validation(pointer, "must be a BCP 47 language code such as en or pt-BR")
	}
	return nil
}

func videoFeatures(features []string) *apierror.Error {
	const pointer = ptrInput + "/features"
	if len(features) == 0 {
		return apierror.Validation(pointer, "is required and must list at least one of %s", strings.Join(providers.VideoAnalysisFeatures, ", "))
	}
	seen := map[string]bool{}
	for i, f := range features {
		if !contains(providers.VideoAnalysisFeatures, f) {
			return apierror.Validation(pointer+"/"+strconv.Itoa(i), "must be one of %s, not %q", strings.Join(providers.VideoAnalysisFeatures, ", "), f)
		}
		if seen[f] {
			return apierror.Validation(pointer+"/"+strconv.Itoa(i), "repeats %q", f)
		}
		seen[f] = true
	}
	return nil
}

func compact(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}
