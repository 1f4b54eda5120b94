package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

// Unsupported tells why a provider cannot run a job with these
// requirements: an evaluation reason (service_not_supported or
// option_not_supported) and a message, or "" when it can.
func Unsupported(p *providers.Provider, req jobs.Requirements) (reason, message string) {
	capability, ok := p.Services[req.Service]
	if !ok {
		return jobs.EvalServiceNotSupported, fmt.Sprintf("provider %s does not offer %s", p.ID, req.Service)
	}
	for _, f := range req.Features {
		if !slices.Contains(capability.Features, f) {
			return jobs.EvalOptionNotSupported, fmt.Sprintf("provider %s does not offer the %s feature for %s", p.ID, f, req.Service)
		}
	}
	if req.Language != "" && !acceptsLanguage(capability.Languages, req.Language) {
		return jobs.EvalOptionNotSupported, fmt.Sprintf("provider %s does not transcribe language %s", p.ID, req.Language)
	}
	if req.SourceLanguage != "" && !acceptsLanguage(capability.SourceLanguages, req.SourceLanguage) {
		return jobs.EvalOptionNotSupported, fmt.Sprintf("provider %s does not translate from %s", p.ID, req.SourceLanguage)
	}
	if req.TargetLanguage != "" && !acceptsLanguage(capability.TargetLanguages, req.TargetLanguage) {
		return jobs.EvalOptionNotSupported, fmt.Sprintf("provider %s does not translate into %s", p.ID, req.TargetLanguage)
	}
	if req.Model != "" && !OffersModel(capability, req.Model) {
		return jobs.EvalOptionNotSupported, fmt.Sprintf("provider %s does not offer model %s", p.ID, req.Model)
	}
	if req.JSONSchema && req.Model != "" && !slices.Contains(capability.JSONSchemaModels, req.Model) {
		return jobs.EvalOptionNotSupported, fmt.Sprintf("model %s of provider %s does not take a JSON schema for its output", req.Model, p.ID)
	}
	if req.JSONSchema && len(capability.JSONSchemaModels) == 0 {
		return jobs.EvalOptionNotSupported, fmt.Sprintf("provider %s lists no model that takes a JSON schema for its output", p.ID)
	}
	if req.TranslateToEnglish && !capability.TranslatesToEnglish {
		return jobs.EvalOptionNotSupported, fmt.Sprintf("provider %s does not translate transcripts into English (options.translate_to_english)", p.ID)
	}
	return "", ""
}

// OffersModel reports whether a capability lists a model, exactly: a job
// may pin only a listed model, so a capability without models offers none.
func OffersModel(capability *providers.Capability, model string) bool {
	return slices.Contains(capability.Models, model)
}

// Models lists the models the catalog's providers of a service offer,
// sorted and each once: the models a job routed automatically may pin.
func Models(catalog []*providers.Provider, service jobs.ServiceID) []string {
	var models []string
	for _, p := range catalog {
		if c, ok := p.Services[service]; ok {
			models = append(models, c.Models...)
		}
	}
	slices.Sort(models)
	return slices.Compact(models)
}

// acceptsLanguage reports whether a capability's language list accepts a
// language code. An empty list accepts every language; a listed primary
// language ("en") accepts its regional forms ("en-GB").
func acceptsLanguage(list []string, code string) bool {
	if len(list) == 0 {
		return true
	}
	for _, l := range list {
		if strings.EqualFold(l, code) || strings.HasPrefix(strings.ToLower(code), strings.ToLower(l)+"-") {
			return true
		}
	}
	return false
}

// MediaCapBytes is the most media any provider could take for a job: the
// largest max_file_size_mb, in bytes, among the catalog's providers of the
// service (only the explicit provider's, when the job names one); 0 when
// one of them sets no limit. The media stage caps its fetch at it, before
// routing picks a provider whose own limit fits (docs/media.md).
func MediaCapBytes(catalog []*providers.Provider, service jobs.ServiceID, explicit string) int64 {
	var largest int64
	for _, p := range catalog {
		c, ok := p.Services[service]
		if !ok || (explicit != "" && p.ID != explicit) {
			continue
		}
		if c.Limits.MaxFileSizeMB <= 0 {
			return 0
		}
		largest = max(largest, int64(c.Limits.MaxFileSizeMB)<<20)
	}
	return largest
}
