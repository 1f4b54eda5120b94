package providers

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"go.yaml.in/yaml/v3"
	"golang.org/x/text/language"
)

// Status is the operational status of a provider or of one of its services.
type Status string

// Provider and capability statuses.
const (
	StatusActive   Status = "active"
	StatusDegraded Status = "degraded"
	StatusDisabled Status = "disabled"
)

// Statuses lists the valid statuses.
var Statuses = []Status{StatusActive, StatusDegraded, StatusDisabled}

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool { return slices.Contains(Statuses, s) }

// Pricing units.
const (
	PerMinute    = "per_minute"
	PerCharacter = "per_character"
	PerPage      = "per_page"
	PerRequest   = "per_request"
	PerToken     = "per_token"
)

// PricingUnits lists the valid Pricing.Unit values.
var PricingUnits = []string{PerMinute, PerCharacter, PerPage, PerRequest, PerToken}

// Catalog is the set of configured providers.
type Catalog struct {
	// PriceVersion names the prices in force, recorded with every job's
	// cost; "" makes it a hash of the pricing entries (PriceBook.Version).
	PriceVersion string `yaml:"price_version"`
	// CircuitBreaker is the deployment's default circuit breaker
	// (docs/providers.md, Circuit breakers); nil: breaker.Defaults.
	CircuitBreaker *CircuitBreaker `yaml:"circuit_breaker"`
	Providers      []*Provider     `yaml:"providers"` // in file order
}

// Lookup finds a provider by id.
func (c *Catalog) Lookup(id string) (*Provider, bool) {
	for _, p := range c.Providers {
		if p.ID == id {
			return p, true
		}
	}
	return nil, false
}

// Provider is one backend a job can be routed to.
type Provider struct {
	ID            string  `yaml:"id"`
	Name          string  `yaml:"name"`
	Adapter       string  `yaml:"adapter"`
	Quality       float64 `yaml:"quality"`         // 0..1, optional
	LatencyMSHint int     `yaml:"latency_ms_hint"` // optional
	Status        Status  `yaml:"status"`          // default active
	// StatusReason says why the provider has its status, e.g. the local
	// engine that is not installed (optional; shown as status_reason).
	StatusReason string `yaml:"status_reason"`
	// CallTimeoutSeconds bounds one try of a call to the provider, however
	// the provider behaves (hangs, trickles); 0 leaves it to the adapter.
	CallTimeoutSeconds int                            `yaml:"call_timeout_seconds"`
	Settings           map[string]any                 `yaml:"settings"` // adapter-specific
	Services           map[jobs.ServiceID]*Capability `yaml:"services"`
	// CircuitBreaker overrides the catalog's circuit_breaker for this
	// provider's services, field by field.
	CircuitBreaker *CircuitBreaker `yaml:"circuit_breaker"`
}

// Capability is what a provider offers for one service.
type Capability struct {
	Features        []string `json:"features,omitempty" yaml:"features"`
	Languages       []string `json:"languages,omitempty" yaml:"languages"`
	SourceLanguages []string `json:"source_languages,omitempty" yaml:"source_languages"`
	TargetLanguages []string `json:"target_languages,omitempty" yaml:"target_languages"`
	Models          []string `json:"models,omitempty" yaml:"models"`
	// JSONSchemaModels are the models (of Models) that take a JSON schema
	// for their output: llm-tasks with response_format json_schema are
	// routed to them (docs/providers.md, The catalog file).
	JSONSchemaModels []string `json:"json_schema_models,omitempty" yaml:"json_schema_models"`
	// TranslatesToEnglish says a transcriptions capability can give the
	// transcript in English whatever the spoken language: transcriptions
	// with options.translate_to_english are routed to it
	// (docs/providers.md, The catalog file).
	TranslatesToEnglish bool    `json:"translates_to_english,omitempty" yaml:"translates_to_english"`
	Limits              Limits  `json:"limits" yaml:"limits"`
	Pricing             Pricing `json:"pricing" yaml:"pricing"`
	Status              Status  `json:"status" yaml:"status"` // default active
}

// Limits are a capability's published limits; zero means not limited.
type Limits struct {
	RequestsPerMinute  int `json:"requests_per_minute" yaml:"requests_per_minute"`
	RequestsPerDay     int `json:"requests_per_day" yaml:"requests_per_day"`
	MaxFileSizeMB      int `json:"max_file_size_mb" yaml:"max_file_size_mb"`
	MaxDurationSeconds int `json:"max_duration_seconds" yaml:"max_duration_seconds"`
}

// Pricing is the cost of a capability per unit (docs/providers.md, The
// catalog file); PriceBook prices jobs with it.
type Pricing struct {
	Unit     string  `json:"unit" yaml:"unit"` // one of PricingUnits
	Amount   float64 `json:"amount" yaml:"amount"`
	Currency string  `json:"currency" yaml:"currency"` // ISO 4217
	// InputAmount and OutputAmount price per_token input and output
	// tokens apart; unset, each is Amount.
	InputAmount  *float64 `json:"input_amount,omitempty" yaml:"input_amount"`
	OutputAmount *float64 `json:"output_amount,omitempty" yaml:"output_amount"`
	// MinimumCharge is the least a job costs (0: none).
	MinimumCharge float64 `json:"minimum_charge,omitempty" yaml:"minimum_charge"`
	// RoundUpToMinute bills per_minute media by started minute.
	RoundUpToMinute bool `json:"round_up_to_minute,omitempty" yaml:"round_up_to_minute"`
}

//go:embed default_catalog.yaml
var defaultCatalogYAML []byte

// DefaultCatalog is the built-in catalog of sandbox providers; each call
// returns a fresh copy.
func DefaultCatalog() *Catalog {
	c, err := ParseCatalog(defaultCatalogYAML)
	if err != nil {
		panic("providers: built-in catalog is invalid: " + err.Error())
	}
	return c
}

// LoadCatalog reads and validates a providers file; an empty path gives
// DefaultCatalog.
func LoadCatalog(path string) (*Catalog, error) {
	if path == "" {
		return DefaultCatalog(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("providers file: %w (check --providers / GATEWAY_PROVIDERS_FILE)", err)
	}
	c, err := ParseCatalog(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseCatalog decodes and validates a providers file: YAML with a top-level
// providers: list. Unknown keys are errors; every problem found is reported,
// each naming the provider and field.
func ParseCatalog(data []byte) (*Catalog, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("providers file: %w", err)
	}
	if root.Kind == 0 {
		return nil, errors.New("providers file: the file is empty; it needs a top-level providers: list")
	}
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 && root.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("providers file: the top level must be a mapping with a providers: list")
	}
	lines := providerLines(&root)

	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Catalog
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, explainDecodeError(err, lines)
	}
	if err := validateCatalog(&c, lines); err != nil {
		return nil, err
	}
	return &c, nil
}

// providerLine is where a provider entry starts in the file.
type providerLine struct {
	line int
	id   string
}

// providerLines finds the line and id of each entry of the providers list.
func providerLines(root *yaml.Node) []providerLine {
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	top := root.Content[0]
	var out []providerLine
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "providers" || top.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		for _, item := range top.Content[i+1].Content {
			pl := providerLine{line: item.Line}
			if item.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(item.Content); j += 2 {
					if item.Content[j].Value == "id" {
						pl.id = item.Content[j+1].Value
					}
				}
			}
			out = append(out, pl)
		}
	}
	return out
}

// describe names the provider that starts at or before line.
func describe(lines []providerLine, line int) string {
	var found *providerLine
	for i := range lines {
		if lines[i].line <= line {
			found = &lines[i]
		}
	}
	switch {
	case found == nil:
		return fmt.Sprintf("line %d", line)
	case found.id == "":
		return fmt.Sprintf("line %d (provider on line %d)", line, found.line)
	default:
		return fmt.Sprintf("line %d (provider %q)", line, found.id)
	}
}

// A key's text may hold line breaks ("0\n0", from a folded YAML key), so
// the messages are matched across lines and printed on one.
var unknownFieldRE = regexp.MustCompile(`(?s)^line (\d+): field (.+) not found in type (\S+)$`)
var errorLineRE = regexp.MustCompile(`(?s)^line (\d+): (.*)$`)

// oneLine escapes the line breaks of a decoder's message.
func oneLine(msg string) string {
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(msg)
}

// yamlTypes describes the decoded types for unknown-key messages.
var yamlTypes = map[string]struct {
	what string
	typ  reflect.Type
}{
	"providers.Catalog":        {"at the top level", reflect.TypeFor[Catalog]()},
	"providers.Provider":       {"in a provider", reflect.TypeFor[Provider]()},
	"providers.Capability":     {"in a service capability", reflect.TypeFor[Capability]()},
	"providers.Limits":         {"in limits", reflect.TypeFor[Limits]()},
	"providers.Pricing":        {"in pricing", reflect.TypeFor[Pricing]()},
	"providers.CircuitBreaker": {"in circuit_breaker", reflect.TypeFor[CircuitBreaker]()},
}

// explainDecodeError rewrites yaml.v3 type errors into messages that name
// the provider and say which keys are allowed.
func explainDecodeError(err error, lines []providerLine) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("providers file: %w", err)
	}
	errs := make([]error, 0, len(te.Errors))
	for _, msg := range te.Errors {
		if m := unknownFieldRE.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			if t, ok := yamlTypes[m[3]]; ok {
				errs = append(errs, fmt.Errorf("providers file: %s: unknown key %q %s; allowed keys: %s",
					describe(lines, line), m[2], t.what, strings.Join(yamlKeys(t.typ), ", ")))
				continue
			}
		}
		if m := errorLineRE.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			errs = append(errs, fmt.Errorf("providers file: %s: %s", describe(lines, line), oneLine(m[2])))
			continue
		}
		errs = append(errs, fmt.Errorf("providers file: %s", oneLine(msg)))
	}
	return errors.Join(errs...)
}

// yamlKeys lists the YAML keys of a struct type.
func yamlKeys(t reflect.Type) []string {
	keys := make([]string, 0, t.NumField())
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

var (
	providerIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._~-]*$`)
	currencyRE   = regexp.MustCompile(`^[A-Z]{3}$`)
)

// validateCatalog checks c, fills in defaults and reports every problem.
func validateCatalog(c *Catalog, lines []providerLine) error {
	var errs []error
	if len(c.Providers) == 0 {
		return errors.New("providers file: no providers; add at least one entry to the top-level providers: list")
	}
	for _, msg := range c.CircuitBreaker.validate() {
		errs = append(errs, fmt.Errorf("providers file: circuit_breaker.%s", msg))
	}
	seen := map[string]int{} // id → index
	for i, p := range c.Providers {
		line := 0
		if i < len(lines) {
			line = lines[i].line
		}
		where := fmt.Sprintf("provider #%d (line %d)", i+1, line)
		if p == nil {
			errs = append(errs, fmt.Errorf("providers file: %s is empty; give it id, name, adapter and services", where))
			continue
		}
		if p.ID != "" {
			where = fmt.Sprintf("provider %q (line %d)", p.ID, line)
		}
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("providers file: %s: %s", where, fmt.Sprintf(format, args...)))
		}

		switch {
		case p.ID == "":
			fail("id is missing; give every provider a unique id such as my-provider")
		case !providerIDRE.MatchString(p.ID):
			fail("id %q may contain only letters, digits, '.', '_', '~' and '-', starting with a letter or digit", p.ID)
		default:
			if j, dup := seen[p.ID]; dup {
				other := 0
				if j < len(lines) {
					other = lines[j].line
				}
				fail("id %q is already used by the provider on line %d; ids must be unique", p.ID, other)
			} else {
				seen[p.ID] = i
			}
		}
		if strings.TrimSpace(p.Name) == "" {
			fail("name is missing; set a human-readable name")
		}
		if strings.TrimSpace(p.Adapter) == "" {
			fail("adapter is missing; set the adapter that calls this provider, e.g. sandbox or openai")
		}
		if p.Quality < 0 || p.Quality > 1 || math.IsNaN(p.Quality) {
			fail("quality %v is out of range; use a number from 0 to 1", p.Quality)
		}
		if p.CallTimeoutSeconds < 0 {
			fail("call_timeout_seconds %d is negative; use seconds >= 0 (0: the adapter's own timeouts)", p.CallTimeoutSeconds)
		}
		if p.LatencyMSHint < 0 {
			fail("latency_ms_hint %d is negative; use milliseconds >= 0", p.LatencyMSHint)
		}
		for _, msg := range p.CircuitBreaker.validate() {
			fail("circuit_breaker.%s", msg)
		}
		if p.Status == "" {
			p.Status = StatusActive
		} else if !p.Status.Valid() {
			fail("status %q is not valid; use one of %s", p.Status, joinStatuses())
		}
		if len(p.Services) == 0 {
			fail("services is empty; list at least one of %s", serviceNames())
			continue
		}
		ids := make([]string, 0, len(p.Services))
		for id := range p.Services {
			ids = append(ids, string(id))
		}
		sort.Strings(ids)
		for _, id := range ids {
			if _, ok := jobs.LookupService(id); !ok {
				fail("services: unknown service %q; use one of %s", id, serviceNames())
				continue
			}
			sid := jobs.ServiceID(id)
			capab := p.Services[sid]
			if capab == nil {
				capab = &Capability{}
				p.Services[sid] = capab
			}
			for _, msg := range validateCapability(sid, capab) {
				fail("services.%s.%s", id, msg)
			}
		}
	}
	return errors.Join(errs...)
}

// validateCapability checks one capability and fills in its default status;
// each message starts with the field it concerns.
func validateCapability(sid jobs.ServiceID, c *Capability) []string {
	var msgs []string
	add := func(format string, args ...any) { msgs = append(msgs, fmt.Sprintf(format, args...)) }

	svc, _ := jobs.LookupService(string(sid))
	if allowed := svc.Features; len(c.Features) > 0 && len(allowed) == 0 {
		hint := ""
		if len(svc.CapabilityLists) > 0 {
			hint = fmt.Sprintf(" (%s capabilities list %s instead)", sid, strings.Join(svc.CapabilityLists, ", "))
		}
		add("features: %s has no features; remove the list%s", sid, hint)
	} else {
		for _, f := range c.Features {
			if !slices.Contains(allowed, f) {
				add("features: %q is not a %s feature; use some of %s", f, sid, strings.Join(allowed, ", "))
			}
		}
	}
	lists := map[string]int{"models": len(c.Models), "languages": len(c.Languages),
		"source_languages": len(c.SourceLanguages), "target_languages": len(c.TargetLanguages)}
	for _, field := range []string{"languages", "source_languages", "target_languages", "models"} {
		if lists[field] > 0 && !slices.Contains(svc.CapabilityLists, field) {
			add("%s: only %s capabilities list %s; remove it here", field, servicesListing(field), field)
		}
	}
	for _, m := range c.Models {
		if strings.TrimSpace(m) == "" {
			add("models: a model name is empty")
		}
	}
	for _, m := range c.JSONSchemaModels {
		if !slices.Contains(c.Models, m) {
			add("json_schema_models: %q is not one of models; list it there too", m)
		}
	}
	if c.TranslatesToEnglish && sid != jobs.Transcriptions {
		add("translates_to_english: only transcriptions capabilities translate speech into English; remove it here")
	}
	checkLangs := func(field string, langs []string) {
		if !slices.Contains(svc.CapabilityLists, field) {
			return
		}
		for _, l := range langs {
			if _, err := language.Parse(l); err != nil {
				add("%s: %q is not a BCP 47 language code (%v); use codes such as en, de or pt-BR", field, l, err)
			}
		}
	}
	checkLangs("languages", c.Languages)
	checkLangs("source_languages", c.SourceLanguages)
	checkLangs("target_languages", c.TargetLanguages)

	l := c.Limits
	for _, f := range []struct {
		name string
		v    int
	}{
		{"requests_per_minute", l.RequestsPerMinute},
		{"requests_per_day", l.RequestsPerDay},
		{"max_file_size_mb", l.MaxFileSizeMB},
		{"max_duration_seconds", l.MaxDurationSeconds},
	} {
		if f.v < 0 {
			add("limits.%s: %d is negative; use 0 (no limit) or a positive number", f.name, f.v)
		}
	}

	pr := c.Pricing
	switch {
	case pr.Unit == "":
		add("pricing.unit is missing; use one of %s", strings.Join(PricingUnits, ", "))
	case !slices.Contains(PricingUnits, pr.Unit):
		add("pricing.unit: %q is not valid; use one of %s", pr.Unit, strings.Join(PricingUnits, ", "))
	}
	if pr.Amount < 0 || math.IsNaN(pr.Amount) || math.IsInf(pr.Amount, 0) {
		add("pricing.amount: %v is not valid; use a cost per unit >= 0", pr.Amount)
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"input_amount", pr.InputAmount}, {"output_amount", pr.OutputAmount}, {"minimum_charge", &pr.MinimumCharge}} {
		if f.v != nil && (*f.v < 0 || math.IsNaN(*f.v) || math.IsInf(*f.v, 0)) {
			add("pricing.%s: %v is not valid; use an amount >= 0", f.name, *f.v)
		}
	}
	if (pr.InputAmount != nil || pr.OutputAmount != nil) && pr.Unit != PerToken {
		add("pricing: input_amount and output_amount are for unit per_token only; remove them or use amount")
	}
	if pr.RoundUpToMinute && pr.Unit != PerMinute {
		add("pricing.round_up_to_minute: only for unit per_minute; remove it")
	}
	if !currencyRE.MatchString(pr.Currency) {
		add("pricing.currency: %q is not an ISO 4217 code; use three capital letters such as USD or EUR", pr.Currency)
	}

	if c.Status == "" {
		c.Status = StatusActive
	} else if !c.Status.Valid() {
		add("status: %q is not valid; use one of %s", c.Status, joinStatuses())
	}
	return msgs
}

func joinStatuses() string {
	s := make([]string, len(Statuses))
	for i, st := range Statuses {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
}

// servicesListing names the services whose capabilities may give a list.
func servicesListing(field string) string {
	var s []string
	for _, svc := range jobs.Services() {
		if slices.Contains(svc.CapabilityLists, field) {
			s = append(s, string(svc.ID))
		}
	}
	return strings.Join(s, " and ")
}

func serviceNames() string {
	var s []string
	for _, svc := range jobs.Services() {
		s = append(s, string(svc.ID))
	}
	return strings.Join(s, ", ")
}
