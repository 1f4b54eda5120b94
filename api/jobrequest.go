package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"
	"golang.org/x/net/http/httpguts"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/app/jobops"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/strictjson"
)

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
	MaxOptionsBytes    = 16 << 10
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

// validApplication checks the X-Application header.
func validApplication(app string) *apierror.Error {
	if app == "" || auth.SlugPattern.MatchString(app) {
		return nil
	}
	return apierror.New(422, apierror.CodeValidation,
		"header X-Application: must be 2 to 63 characters of lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen (pattern %s)", auth.SlugPattern)
}

// parseJobRequest decodes and validates a create request for service:
// the job's attributes of the request to submit.
func parseJobRequest(service jobs.Service, body []byte) (*jobops.SubmitRequest, error) {
	env, err := parseEnvelope(body, envelopeSpec{
		Type:    service.JobType,
		Members: []string{"type", "attributes", "meta"},
		WrongType: func(got string) error {
			return apierror.Validation(ptrData+"/type", "must be %q for %s, not %q", service.JobType, service.Endpoint(), got)
		},
		Attributes:         []string{"input", "options", "webhook", "provider", "policy_id"},
		AttributesRequired: true,
	})
	if err != nil {
		return nil, err
	}
	req := &jobops.SubmitRequest{}
	if err := parseMeta(env.Meta, req); err != nil {
		return nil, err
	}
	attrs := env.Attributes
	if req.Parsed, err = parseJobSpec(service.ID, attrs["input"], attrs["options"]); err != nil {
		return nil, err
	}
	req.Input = compact(attrs["input"])
	if len(req.Input) > MaxInputBytes {
		return nil, apierror.Validation(ptrInput, "is %d bytes; inline input is limited to %d KiB (give larger texts as a document by url)", len(req.Input), MaxInputBytes>>10)
	}
	if !strictjson.Absent(attrs["options"]) {
		req.Options = compact(attrs["options"])
		if len(req.Options) > MaxOptionsBytes {
			return nil, apierror.Validation(ptrOptions, "is %d bytes; options are limited to %d KiB", len(req.Options), MaxOptionsBytes>>10)
		}
	}
	if req.Webhook, err = parseWebhook(attrs["webhook"]); err != nil {
		return nil, err
	}
	if req.Provider, _, err = stringMember(attrs, "provider", ptrAttributes); err != nil {
		return nil, err
	}
	if _, given := attrs["provider"]; given && !strictjson.Absent(attrs["provider"]) && req.Provider == "" {
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

func parseMeta(raw json.RawMessage, req *jobops.SubmitRequest) error {
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

func parseWebhook(raw json.RawMessage) (*jobs.Webhook, error) {
	if strictjson.Absent(raw) {
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
	var w jobs.Webhook
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
		pointer := ptrWebhook + "/headers/" + strictjson.EscapeName(name)
		value := w.Headers[name]
		if !httpguts.ValidHeaderFieldName(name) {
			return nil, apierror.Validation(pointer, "is not a valid header name (letters, digits and !#$%%&'*+-.^_`|~ only)")
		}
		if len(name) > MaxWebhookHeaderNameBytes {
			return nil, apierror.Validation(pointer, "has a name of %d bytes; header names are limited to %d", len(name), MaxWebhookHeaderNameBytes)
		}
		if slices.Contains(reservedWebhookHeaders, strings.ToLower(name)) {
			return nil, apierror.Validation(pointer, "is set by the gateway and cannot be overridden")
		}
		if len(value) > MaxWebhookHeaderValueBytes {
			return nil, apierror.Validation(pointer, "is %d bytes; header values are limited to %d KiB", len(value), MaxWebhookHeaderValueBytes>>10)
		}
		if strings.ContainsAny(value, "\r\n") {
			return nil, apierror.Validation(pointer, "must not contain line breaks")
		}
		if !httpguts.ValidHeaderFieldValue(value) {
			return nil, apierror.Validation(pointer, "must not contain control characters")
		}
		total += len(name) + len(value)
	}
	if total > MaxWebhookHeadersBytes {
		return nil, apierror.Validation(ptrWebhook+"/headers", "are %d bytes (names and values); they are limited to %d KiB together", total, MaxWebhookHeadersBytes>>10)
	}
	return &w, nil
}

// parseJobSpec decodes and validates a service's input and options.
func parseJobSpec(service jobs.ServiceID, input, options json.RawMessage) (jobs.Request, error) {
	spec, ok := jobs.ServiceOf(service)
	if !ok {
		return nil, apierror.Validation(ptrData+"/type", "unknown service")
	}
	parsed, err := spec.Parse(input, options)
	var field *jobs.FieldError
	if errors.As(err, &field) {
		return nil, apierror.Validation(ptrAttributes+field.Pointer, "%s", field.Message)
	}
	if err != nil {
		return nil, apierror.Validation(ptrAttributes, "%v", err)
	}
	return parsed, nil
}

func compact(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}
