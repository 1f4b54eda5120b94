package api

import (
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"golang.org/x/text/language"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/strictjson"
	"github.com/ai-job-gateway/gateway/policy"
)

// idRule says what a policy write expects of data.id.
type idRule int

const (
	idForbidden idRule = iota // POST /v1/policies: the gateway assigns ids
	idRequired                // PUT and PATCH /v1/policies/:id: must equal the path id
	idOptional                // scoped PUT: the record of the scope, if any
)

// nullable is a request member that may be absent, null or a value.
type nullable[T any] struct {
	set, null bool
	value     T
}

// present reports a member given with a non-null value.
func (n nullable[T]) present() bool { return n.set && !n.null }

func valueOf[T any](v T) nullable[T] { return nullable[T]{set: true, value: v} }

// policyDraft is the decoded, individually validated attributes of a
// policy write; applyPolicyDraft merges it into a policy and checks the
// whole.
type policyDraft struct {
	id          string
	tenant      nullable[string]
	name        nullable[string]
	description nullable[string]
	strategy    nullable[policy.Strategy]
	service     nullable[jobs.ServiceID]
	application nullable[string]
	services    nullable[[]jobs.ServiceID]
	providers   nullable[[]policy.Entry]
}

const ptrPolicyProviders = ptrAttributes + "/providers"

// policyAttributeNames are the writable attributes; policyReadOnlyNames
// are accepted (a representation can be sent back as is) and ignored.
var (
	policyAttributeNames = []string{"tenant", "name", "description", "routing_strategy", "service", "application", "services", "providers"}
	policyReadOnlyNames  = []string{"version", "created_at", "updated_at"}
)

// maxPolicyNameLength is the longest name the policies table keeps.
const maxPolicyNameLength = 255

// readPolicyBody reads and decodes the body of a policy write,
// {data: {id, type: policy, attributes}}, and checks each given attribute
// on its own; rules across attributes are applyPolicyDraft's.
func (pc policyCodec) readPolicyBody(c *gin.Context, rule idRule, pathID string) (*policyDraft, error) {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return nil, err
	}
	return pc.parsePolicyBody(body, rule, pathID)
}

// parsePolicyBody decodes a policy write's body (readPolicyBody).
func (pc policyCodec) parsePolicyBody(body []byte, rule idRule, pathID string) (*policyDraft, error) {
	env, err := parseEnvelope(body, envelopeSpec{
		Type:               "policy",
		Members:            []string{"id", "type", "attributes", "meta"},
		ID:                 rule.check(pathID),
		Attributes:         append(slices.Clone(policyAttributeNames), policyReadOnlyNames...),
		AttributesRequired: true,
	})
	if err != nil {
		return nil, err
	}
	d := &policyDraft{id: env.ID}
	attrs := env.Attributes
	if d.tenant, err = nullableMember[string](attrs, "tenant", "a tenant slug or null"); err != nil {
		return nil, err
	}
	if d.name, err = nullableMember[string](attrs, "name", "a non-empty string"); err != nil {
		return nil, err
	}
	if d.description, err = nullableMember[string](attrs, "description", "a string"); err != nil {
		return nil, err
	}
	if d.strategy, err = nullableMember[policy.Strategy](attrs, "routing_strategy", "one of "+strategyNames()); err != nil {
		return nil, err
	}
	if d.strategy.present() && !slices.Contains(policy.Strategies, d.strategy.value) {
		return nil, apierror.Validation(ptrAttributes+"/routing_strategy", "must be one of %s, not %q", strategyNames(), d.strategy.value)
	}
	if d.service, err = nullableMember[jobs.ServiceID](attrs, "service", "a service id or null"); err != nil {
		return nil, err
	}
	if d.service.present() {
		if _, ok := jobs.LookupService(string(d.service.value)); !ok {
			return nil, apierror.Validation(ptrAttributes+"/service", "must be one of %s, not %q", policyServiceNames(), d.service.value)
		}
	}
	if d.application, err = nullableMember[string](attrs, "application", "an application slug or null"); err != nil {
		return nil, err
	}
	if d.application.present() && !auth.SlugPattern.MatchString(d.application.value) {
		return nil, apierror.Validation(ptrAttributes+"/application", "must be 2 to 63 characters of lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen (pattern %s), or null", auth.SlugPattern)
	}
	if d.services, err = nullableMember[[]jobs.ServiceID](attrs, "services", "an array of service ids"); err != nil {
		return nil, err
	}
	for i, id := range d.services.value {
		pointer := ptrAttributes + "/services/" + strconv.Itoa(i)
		if _, ok := jobs.LookupService(string(id)); !ok {
			return nil, apierror.Validation(pointer, "must be one of %s, not %q", policyServiceNames(), id)
		}
		if slices.Contains(d.services.value[:i], id) {
			return nil, apierror.Validation(pointer, "repeats %q", id)
		}
	}
	if d.providers, err = pc.parsePolicyProviders(attrs); err != nil {
		return nil, err
	}
	return d, nil
}

// check is the envelope's check of data.id under the rule; the id is
// lowercased.
func (rule idRule) check(pathID string) func(id string, given bool) (string, error) {
	return func(id string, given bool) (string, error) {
		switch rule {
		case idForbidden:
			if given {
				return "", apierror.Validation(ptrData+"/id", "is assigned by the gateway; omit it")
			}
		case idRequired:
			if !given || id == "" {
				return "", apierror.Validation(ptrData+"/id", "is required and must equal the id in the path (%s)", pathID)
			}
			if !strings.EqualFold(id, pathID) {
				return "", apierror.Validation(ptrData+"/id", "must equal the id in the path (%s), not %q", pathID, id)
			}
		case idOptional:
			if given {
				if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
					return "", apierror.Validation(ptrData+"/id", "must be a UUID")
				}
			}
		}
		return strings.ToLower(id), nil
	}
}

// nullableMember decodes an optional attribute that may be null.
func nullableMember[T any](attrs map[string]json.RawMessage, key, want string) (nullable[T], error) {
	raw, ok := attrs[key]
	if !ok {
		return nullable[T]{}, nil
	}
	if strictjson.Absent(raw) {
		return nullable[T]{set: true, null: true}, nil
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return nullable[T]{}, apierror.Validation(ptrAttributes+"/"+key, "must be %s", want)
	}
	return valueOf(v), nil
}

// policyEntryInput is one element of attributes.providers as sent.
type policyEntryInput struct {
	ProviderID   *string         `json:"provider_id"`
	ProviderName json.RawMessage `json:"provider_name"` // read-only, ignored
	Priority     *int            `json:"priority"`
	Weight       *int            `json:"weight"`
	Conditions   json.RawMessage `json:"conditions"`
}

type policyConditionsInput struct {
	MaxFileSizeMB *int     `json:"max_file_size_mb"`
	Languages     []string `json:"languages"`
}

// parsePolicyProviders decodes attributes.providers: each entry names a
// catalog provider once, with a unique priority >= 1, a weight >= 1
// (default 1) and optional conditions. Whether the providers support the
// policy's services is checked once the services are known.
func (pc policyCodec) parsePolicyProviders(attrs map[string]json.RawMessage) (nullable[[]policy.Entry], error) {
	raw, ok := attrs["providers"]
	if !ok {
		return nullable[[]policy.Entry]{}, nil
	}
	if strictjson.Absent(raw) {
		return nullable[[]policy.Entry]{set: true, null: true}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nullable[[]policy.Entry]{}, apierror.Validation(ptrPolicyProviders, "must be an array of {provider_id, priority, weight, conditions}")
	}
	entries := make([]policy.Entry, 0, len(items))
	for i, item := range items {
		pointer := ptrPolicyProviders + "/" + strconv.Itoa(i)
		if strictjson.Absent(item) {
			return nullable[[]policy.Entry]{}, apierror.Validation(pointer, "must be an object")
		}
		var in policyEntryInput
		if err := decodeStrict(item, pointer, &in); err != nil {
			return nullable[[]policy.Entry]{}, err
		}
		if in.ProviderID == nil || *in.ProviderID == "" {
			return nullable[[]policy.Entry]{}, apierror.Validation(pointer+"/provider_id", "is required")
		}
		id := *in.ProviderID
		if _, ok := pc.catalog.Lookup(id); !ok {
			return nullable[[]policy.Entry]{}, apierror.Unprocessable(apierror.CodeUnknownProvider, "%s/provider_id: no provider %q (see GET /v1/providers)", pointer, id)
		}
		if j := slices.IndexFunc(entries, func(e policy.Entry) bool { return e.ProviderID == id }); j >= 0 {
			return nullable[[]policy.Entry]{}, apierror.Validation(pointer+"/provider_id", "repeats provider %q of %s/%d; list each provider once", id, ptrPolicyProviders, j)
		}
		if in.Priority == nil {
			return nullable[[]policy.Entry]{}, apierror.Validation(pointer+"/priority", "is required (an integer of at least 1; lower is tried first)")
		}
		if *in.Priority < 1 {
			return nullable[[]policy.Entry]{}, apierror.Validation(pointer+"/priority", "must be an integer of at least 1")
		}
		if j := slices.IndexFunc(entries, func(e policy.Entry) bool { return e.Priority == *in.Priority }); j >= 0 {
			return nullable[[]policy.Entry]{}, apierror.Validation(pointer+"/priority", "repeats priority %d of %s/%d; priorities must be unique within a policy", *in.Priority, ptrPolicyProviders, j)
		}
		entry := policy.Entry{ProviderID: id, Priority: *in.Priority, Weight: 1}
		if in.Weight != nil {
			if *in.Weight < 1 {
				return nullable[[]policy.Entry]{}, apierror.Validation(pointer+"/weight", "must be an integer of at least 1")
			}
			entry.Weight = *in.Weight
		}
		conditions, err := parsePolicyConditions(in.Conditions, pointer+"/conditions")
		if err != nil {
			return nullable[[]policy.Entry]{}, err
		}
		entry.Conditions = conditions
		entries = append(entries, entry)
	}
	return valueOf(entries), nil
}

// parsePolicyConditions decodes an entry's conditions; null and {} mean
// none.
func parsePolicyConditions(raw json.RawMessage, pointer string) (*policy.Conditions, error) {
	if strictjson.Absent(raw) {
		return nil, nil
	}
	var in policyConditionsInput
	if err := decodeStrict(raw, pointer, &in); err != nil {
		return nil, err
	}
	if in.MaxFileSizeMB == nil && in.Languages == nil {
		return nil, nil
	}
	if in.MaxFileSizeMB != nil && *in.MaxFileSizeMB < 1 {
		return nil, apierror.Validation(pointer+"/max_file_size_mb", "must be an integer of at least 1")
	}
	if in.Languages != nil && len(in.Languages) == 0 {
		return nil, apierror.Validation(pointer+"/languages", "must list at least one language code; omit it to allow every language")
	}
	for i, code := range in.Languages {
		if _, err := language.Parse(code); err != nil || code == "" {
			return nil, apierror.Validation(pointer+"/languages/"+strconv.Itoa(i), "must be a BCP 47 language code such as en or pt-BR, not %q", code)
		}
	}
	return &policy.Conditions{MaxFileSizeMB: in.MaxFileSizeMB, Languages: in.Languages}, nil
}

// applyPolicyDraft merges d into p and checks the result. replace (create,
// PUT, scoped PUT) requires name, routing_strategy and providers and resets
// what d omits (description, service scope) to its default; otherwise
// (PATCH) only given members change. The tenant is the caller's business.
func (pc policyCodec) applyPolicyDraft(p *policy.Policy, d *policyDraft, replace bool) error {
	if replace {
		switch {
		case !d.name.present():
			return apierror.Validation(ptrAttributes+"/name", "is required")
		case !d.strategy.present():
			return apierror.Validation(ptrAttributes+"/routing_strategy", "is required (one of %s)", strategyNames())
		case !d.providers.present():
			return apierror.Validation(ptrPolicyProviders, "is required (an array of {provider_id, priority, weight, conditions}; may be empty)")
		}
	}
	if d.name.set {
		name := d.name.value
		if d.name.null || strings.TrimSpace(name) == "" {
			return apierror.Validation(ptrAttributes+"/name", "must be a non-empty string")
		}
		if utf8.RuneCountInString(name) > maxPolicyNameLength {
			return apierror.Validation(ptrAttributes+"/name", "must be at most %d characters", maxPolicyNameLength)
		}
		p.Name = name
	}
	if d.description.set || replace {
		p.Description = d.description.value // null or omitted on replace: ""
	}
	if d.strategy.set {
		if d.strategy.null {
			return apierror.Validation(ptrAttributes+"/routing_strategy", "must be one of %s", strategyNames())
		}
		p.Strategy = d.strategy.value
	}

	// The earlier form (services) stands in place of service and
	// application; the two cannot be mixed in one request.
	if d.services.present() && (d.service.present() || d.application.present()) {
		return apierror.Validation(ptrAttributes+"/services", "is the earlier form of service and application: give services, or service and application, not both")
	}
	if d.services.present() {
		p.Services = slices.Clone(d.services.value)
		p.Application = ""
	} else {
		if d.service.present() {
			p.Services = []jobs.ServiceID{d.service.value}
		} else if d.service.set || replace {
			p.Services = nil // every service
		}
		if d.application.set || replace {
			p.Application = d.application.value
		}
	}
	if p.Application != "" && len(p.Services) != 1 {
		return apierror.Validation(ptrAttributes+"/application", "needs service: an application scope lives inside one service")
	}

	if d.providers.set {
		if d.providers.null {
			return apierror.Validation(ptrPolicyProviders, "must be an array (may be empty)")
		}
		p.Providers = slices.Clone(d.providers.value)
	}
	if err := pc.validatePolicySupport(*p); err != nil {
		return err
	}
	slices.SortStableFunc(p.Providers, func(a, b policy.Entry) int { return a.Priority - b.Priority })
	return nil
}

// validatePolicySupport checks that each provider supports the policy's
// service, or at least one of its services for the earlier multi-service
// form (routing skips it for the others); every catalog provider supports
// some service, which is all a policy for every service asks.
func (pc policyCodec) validatePolicySupport(p policy.Policy) error {
	for i, e := range p.Providers {
		cp, ok := pc.catalog.Lookup(e.ProviderID)
		pointer := ptrPolicyProviders + "/" + strconv.Itoa(i) + "/provider_id"
		if !ok {
			return apierror.Unprocessable(apierror.CodeUnknownProvider, "%s: no provider %q (see GET /v1/providers)", pointer, e.ProviderID)
		}
		if len(p.Services) == 0 {
			continue
		}
		if !slices.ContainsFunc(p.Services, func(id jobs.ServiceID) bool { return cp.Services[id] != nil }) {
			return apierror.Unprocessable(apierror.CodeUnsupportedOption, "%s: provider %s does not support %s", pointer, e.ProviderID, joinServiceIDs(p.Services))
		}
	}
	return nil
}

// matchesScope checks the scope attributes of a scoped PUT against the
// scope of the path and token, then sets the draft to that scope. Null or
// equal values are accepted (a resolved policy can be sent back as is);
// another tenant is 403, another service or application 422; services (the
// earlier form) is ignored.
func (d *policyDraft) matchesScope(sc policyScope) error {
	if d.tenant.present() && d.tenant.value != sc.tenant {
		return apierror.Forbidden("%s/tenant: scoped policies belong to the token's tenant (%s)", ptrAttributes, sc.tenant)
	}
	if d.service.present() && d.service.value != sc.service {
		return apierror.Validation(ptrAttributes+"/service", "must be %s, the service in the path, or be omitted", sc.service)
	}
	if d.application.present() && d.application.value != sc.application {
		return apierror.Validation(ptrAttributes+"/application", "must be %s, the application in the path, or be omitted", sc.application)
	}
	d.tenant = nullable[string]{}
	d.services = nullable[[]jobs.ServiceID]{}
	d.service = valueOf(sc.service)
	d.application = valueOf(sc.application)
	return nil
}

func strategyNames() string {
	names := make([]string, 0, len(policy.Strategies))
	for _, st := range policy.Strategies {
		names = append(names, string(st))
	}
	return strings.Join(names, ", ")
}

func policyServiceNames() string {
	names := []string{}
	for _, svc := range jobs.Services() {
		names = append(names, string(svc.ID))
	}
	return strings.Join(names, ", ")
}

func joinServiceIDs(ids []jobs.ServiceID) string {
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		names = append(names, string(id))
	}
	return strings.Join(names, " or ")
}
