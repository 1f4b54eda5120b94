package providers_test

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

var (
	fuzzProviderID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._~-]*$`)
	fuzzCurrency   = regexp.MustCompile(`^[A-Z]{3}$`)
)

// checkCatalog fails unless c holds only what ParseCatalog promises.
func checkCatalog(t *testing.T, data []byte, c *providers.Catalog) {
	t.Helper()
	if len(c.Providers) == 0 {
		t.Fatalf("%q: accepted without providers", data)
	}
	seen := map[string]bool{}
	for _, p := range c.Providers {
		if p == nil || !fuzzProviderID.MatchString(p.ID) || seen[p.ID] ||
			strings.TrimSpace(p.Name) == "" || strings.TrimSpace(p.Adapter) == "" ||
			!(p.Quality >= 0 && p.Quality <= 1) || p.LatencyMSHint < 0 || !p.Status.Valid() || len(p.Services) == 0 {
			t.Fatalf("%q: accepted provider %+v", data, p)
		}
		seen[p.ID] = true
		for id, capab := range p.Services {
			l := capab.Limits
			if _, ok := jobs.LookupService(string(id)); !ok || capab == nil || !capab.Status.Valid() ||
				!slices.Contains(providers.PricingUnits, capab.Pricing.Unit) ||
				!(capab.Pricing.Amount >= 0) || math.IsInf(capab.Pricing.Amount, 0) ||
				!fuzzCurrency.MatchString(capab.Pricing.Currency) ||
				l.RequestsPerMinute < 0 || l.RequestsPerDay < 0 || l.MaxFileSizeMB < 0 || l.MaxDurationSeconds < 0 {
				t.Fatalf("%q: accepted capability %s %+v", data, id, capab)
			}
		}
	}
}

// FuzzParseCatalog parses any providers file: an error names the providers
// file on each of its lines; an accepted catalog holds only valid values
// and, written back as YAML, parses to the same catalog.
func FuzzParseCatalog(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := providers.ParseCatalog(data)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "providers file: ") {
					t.Fatalf("%q: error line %q does not name the providers file", data, line)
				}
			}
			return
		}
		checkCatalog(t, data, c)
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		again, err := providers.ParseCatalog(out)
		if err != nil {
			t.Fatalf("%q, written back as\n%s\ndoes not parse: %v", data, out, err)
		}
		if out2, _ := yaml.Marshal(again); string(out) != string(out2) {
			t.Fatalf("%q: round trip\n%s\nthen\n%s", data, out, out2)
		}
	})
}
