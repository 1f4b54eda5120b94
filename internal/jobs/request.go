package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"
	"golang.org/x/net/http/httpguts"

	"github.com/ai-job-gateway/gateway/internal/strictjson"
)

// Where a create request's members are (docs/api.md, Validation).
const (
	PtrData       = "/data"
	PtrAttributes = "/data/attributes"
	ptrReqInput   = "/data/attributes/input"
	ptrReqOptions = "/data/attributes/options"
	ptrReqWebhook = "/data/attributes/webhook"
)

// CreateAttributes are the members a create request's data.attributes
// may have.
var CreateAttributes = []string{"input", "options", "webhook", "provider", "policy_id"}

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

// Codes of a RequestError (docs/api.md, Errors).
const (
	// RequestInvalid: a member breaks a rule.
	RequestInvalid = "VALIDATION_ERROR"
	// RequestProviderAndPolicy: the request names a provider and a policy.
	RequestProviderAndPolicy = "PROVIDER_AND_POLICY"
)

// RequestError is a create request the job model refuses: the JSON
// pointer of the member at fault in the request's document (empty when
// no one member is), a code and what is wrong.
type RequestError struct {
	Pointer string
	Code    string
	Message string
}

func (e *RequestError) Error() string {
	if e.Pointer == "" {
		return e.Message
	}
	return e.Pointer + ": " + e.Message
}

func invalidRequest(pointer, format string, args ...any) *RequestError {
	return &RequestError{Pointer: pointer, Code: RequestInvalid, Message: fmt.Sprintf(format, args...)}
}

// requestError is a strictjson error as a RequestError; other errors as
// they are.
func requestError(err error) error {
	var e *strictjson.Error
	if errors.As(err, &e) {
		return &RequestError{Pointer: e.Pointer, Code: RequestInvalid, Message: e.Message}
	}
	return err
}

// CreateRequest is a create request's job as the client asked for it.
type CreateRequest struct {
	Input   json.RawMessage
	Options json.RawMessage
	// Parsed is Input and Options, typed.
	Parsed     Request
	Webhook    *Webhook
	Provider   string
	PolicyID   string
	ClientMeta json.RawMessage
}

// ParseCreateBody parses the body of a create request for service: its
// envelope, {"data": {type, attributes, meta}} (strictjson.ParseEnvelope),
// then its job (ParseCreate). Its errors are *RequestError; a body that
// is not JSON is one too, which the API refuses before, with a 400.
func ParseCreateBody(service Service, body []byte) (*CreateRequest, error) {
	env, err := strictjson.ParseEnvelope(body, strictjson.EnvelopeSpec{
		Type:    service.JobType,
		Members: []string{"type", "attributes", "meta"},
		WrongType: func(got string) error {
			return invalidRequest(PtrData+"/type", "must be %q for %s, not %q", service.JobType, service.Endpoint(), got)
		},
		Attributes:         CreateAttributes,
		AttributesRequired: true,
	})
	if err != nil {
		return nil, requestError(err)
	}
	return ParseCreate(service.ID, env.Attributes, env.Meta)
}

// ParseCreate parses and validates the data.attributes (members checked
// against CreateAttributes) and data.meta of a create request for
// service. Its errors are *RequestError.
func ParseCreate(service ServiceID, attrs map[string]json.RawMessage, meta json.RawMessage) (*CreateRequest, error) {
	req := &CreateRequest{}
	var err error
	if req.ClientMeta, err = parseMeta(meta); err != nil {
		return nil, err
	}
	if req.Parsed, err = parseSpec(service, attrs["input"], attrs["options"]); err != nil {
		return nil, err
	}
	req.Input = compact(attrs["input"])
	if len(req.Input) > MaxInputBytes {
		return nil, invalidRequest(ptrReqInput, "is %d bytes; inline input is limited to %d KiB (give larger texts as a document by url)", len(req.Input), MaxInputBytes>>10)
	}
	if !strictjson.Absent(attrs["options"]) {
		req.Options = compact(attrs["options"])
		if len(req.Options) > MaxOptionsBytes {
			return nil, invalidRequest(ptrReqOptions, "is %d bytes; options are limited to %d KiB", len(req.Options), MaxOptionsBytes>>10)
		}
	}
	if req.Webhook, err = ParseWebhook(attrs["webhook"]); err != nil {
		return nil, err
	}
	if req.Provider, _, err = strictjson.String(attrs, "provider", PtrAttributes); err != nil {
		return nil, requestError(err)
	}
	if _, given := attrs["provider"]; given && !strictjson.Absent(attrs["provider"]) && req.Provider == "" {
		return nil, invalidRequest(PtrAttributes+"/provider", "must not be empty")
	}
	if req.PolicyID, _, err = strictjson.String(attrs, "policy_id", PtrAttributes); err != nil {
		return nil, requestError(err)
	}
	if req.PolicyID != "" {
		if _, perr := uuid.Parse(req.PolicyID); perr != nil || len(req.PolicyID) != 36 {
			return nil, invalidRequest(PtrAttributes+"/policy_id", "must be a UUID")
		}
	}
	if req.Provider != "" && req.PolicyID != "" {
		return nil, &RequestError{Code: RequestProviderAndPolicy, Message: fmt.Sprintf(
			"%s/provider and %s/policy_id exclude each other: name a provider or a policy, not both", PtrAttributes, PtrAttributes)}
	}
	return req, nil
}

// parseMeta reads data.meta: only meta.client, an object of bounded size.
func parseMeta(raw json.RawMessage) (json.RawMessage, error) {
	meta, err := strictjson.Object(raw, PtrData+"/meta")
	if err != nil || meta == nil {
		return nil, requestError(err)
	}
	if err := strictjson.OnlyKeys(meta, PtrData+"/meta", "client"); err != nil {
		return nil, requestError(err)
	}
	client, err := strictjson.Object(meta["client"], PtrData+"/meta/client")
	if err != nil || client == nil {
		return nil, requestError(err)
	}
	clientMeta := compact(meta["client"])
	if len(clientMeta) > MaxClientMetaBytes {
		return nil, invalidRequest(PtrData+"/meta/client", "is %d bytes; it is limited to %d KiB", len(clientMeta), MaxClientMetaBytes>>10)
	}
	return clientMeta, nil
}

var reservedWebhookHeaders = []string{"content-type", "content-length", "host", "user-agent", "webhook-id", "webhook-timestamp", "webhook-signature", "transfer-encoding", "connection"}

// ParseWebhook parses and validates data.attributes.webhook of a create
// or a batch; absent, it is nil. Its errors are *RequestError.
func ParseWebhook(raw json.RawMessage) (*Webhook, error) {
	if strictjson.Absent(raw) {
		return nil, nil
	}
	// Check header values one by one, so an error names the header.
	if members, err := strictjson.Object(raw, ptrReqWebhook); err != nil {
		return nil, requestError(err)
	} else if headers, err := strictjson.Object(members["headers"], ptrReqWebhook+"/headers"); err != nil {
		return nil, requestError(err)
	} else {
		if len(headers) > MaxWebhookHeaders {
			return nil, invalidRequest(ptrReqWebhook+"/headers", "has %d headers; at most %d are allowed", len(headers), MaxWebhookHeaders)
		}
		for name := range headers {
			if _, _, err := strictjson.String(headers, name, ptrReqWebhook+"/headers"); err != nil {
				return nil, requestError(err)
			}
		}
	}
	var w Webhook
	if err := strictjson.Decode(raw, ptrReqWebhook, &w); err != nil {
		return nil, requestError(err)
	}
	if w.URL == "" {
		return nil, invalidRequest(ptrReqWebhook+"/url", "is required")
	}
	if len(w.URL) > MaxWebhookURLBytes {
		return nil, invalidRequest(ptrReqWebhook+"/url", "is %d bytes; it is limited to %d", len(w.URL), MaxWebhookURLBytes)
	}
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, invalidRequest(ptrReqWebhook+"/url", "must be an absolute http or https URL")
	}
	if u.User != nil {
		return nil, invalidRequest(ptrReqWebhook+"/url", "must not carry credentials; send them in webhook.headers")
	}
	total := 0
	for _, name := range slices.Sorted(maps.Keys(w.Headers)) {
		pointer := ptrReqWebhook + "/headers/" + strictjson.EscapeName(name)
		value := w.Headers[name]
		if !httpguts.ValidHeaderFieldName(name) {
			return nil, invalidRequest(pointer, "is not a valid header name (letters, digits and !#$%%&'*+-.^_`|~ only)")
		}
		if len(name) > MaxWebhookHeaderNameBytes {
			return nil, invalidRequest(pointer, "has a name of %d bytes; header names are limited to %d", len(name), MaxWebhookHeaderNameBytes)
		}
		if slices.Contains(reservedWebhookHeaders, strings.ToLower(name)) {
			return nil, invalidRequest(pointer, "is set by the gateway and cannot be overridden")
		}
		if len(value) > MaxWebhookHeaderValueBytes {
			return nil, invalidRequest(pointer, "is %d bytes; header values are limited to %d KiB", len(value), MaxWebhookHeaderValueBytes>>10)
		}
		if strings.ContainsAny(value, "\r\n") {
			return nil, invalidRequest(pointer, "must not contain line breaks")
		}
		if !httpguts.ValidHeaderFieldValue(value) {
			return nil, invalidRequest(pointer, "must not contain control characters")
		}
		total += len(name) + len(value)
	}
	if total > MaxWebhookHeadersBytes {
		return nil, invalidRequest(ptrReqWebhook+"/headers", "are %d bytes (names and values); they are limited to %d KiB together", total, MaxWebhookHeadersBytes>>10)
	}
	return &w, nil
}

// parseSpec decodes and validates a service's input and options.
func parseSpec(service ServiceID, input, options json.RawMessage) (Request, error) {
	spec, ok := ServiceOf(service)
	if !ok {
		return nil, invalidRequest(PtrData+"/type", "unknown service")
	}
	parsed, err := spec.Parse(input, options)
	var field *FieldError
	if errors.As(err, &field) {
		return nil, invalidRequest(PtrAttributes+field.Pointer, "%s", field.Message)
	}
	if err != nil {
		return nil, invalidRequest(PtrAttributes, "%v", err)
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
