package providers_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
)

const priceCatalog = `
providers:
  - id: p
    name: P
    adapter: sandbox
    services:
      transcriptions:
        pricing: {unit: per_minute, amount: 0.006, currency: USD}
      video-analyses:
        pricing: {unit: per_minute, amount: 0.1, currency: USD, round_up_to_minute: true}
      translations:
        pricing: {unit: per_character, amount: 0.00002, currency: EUR, minimum_charge: 0.01}
      llm-tasks:
        pricing: {unit: per_token, amount: 0.000001, input_amount: 0.0000025, output_amount: 0.00001, currency: USD}
  - id: free
    name: Free
    adapter: sandbox
    services:
      transcriptions:
        pricing: {unit: per_minute, amount: 0, currency: USD}
      translations:
        pricing: {unit: per_request, amount: 0.5, currency: USD}
`

func priceBook(t *testing.T, yaml string) *providers.PriceBook {
	t.Helper()
	c, err := providers.ParseCatalog([]byte(yaml))
	require.NoError(t, err)
	return providers.NewPriceBook(c)
}

func seconds(s float64) jobs.NativeUsage { return jobs.NativeUsage{MediaSeconds: &s} }

func count(n int64) *int64 { return &n }

func TestPriceMediaBySecond(t *testing.T) {
	t.Parallel()
	b := priceBook(t, priceCatalog)

	u, priced := b.Price("p", jobs.Transcriptions, seconds(1))
	require.True(t, priced)
	require.Equal(t, int64(100000), u.Cost.Nanos, "1 s at 0.006 USD a minute")
	require.Equal(t, "minute", u.Unit)
	require.InDelta(t, 1.0/60, u.Quantity, 1e-9)

	u, _ = b.Price("p", jobs.Transcriptions, seconds(3.02))
	require.Equal(t, int64(302000), u.Cost.Nanos)
	u, _ = b.Price("p", jobs.Transcriptions, seconds(60))
	require.Equal(t, int64(6_000_000), u.Cost.Nanos)
	require.Equal(t, 1.0, u.Quantity)

	u, _ = b.Price("p", jobs.VideoAnalyses, seconds(61))
	require.Equal(t, 2.0, u.Quantity, "round_up_to_minute bills started minutes")
	require.Equal(t, int64(200_000_000), u.Cost.Nanos)
}

func TestPriceCharactersAndMinimumCharge(t *testing.T) {
	t.Parallel()
	b := priceBook(t, priceCatalog)

	u, priced := b.Price("p", jobs.Translations, jobs.NativeUsage{Characters: count(1234)})
	require.True(t, priced)
	require.Equal(t, "character", u.Unit)
	require.Equal(t, 1234.0, u.Quantity)
	require.Equal(t, int64(24_680_000), u.Cost.Nanos)
	require.Equal(t, "EUR", u.Cost.Currency)

	u, _ = b.Price("p", jobs.Translations, jobs.NativeUsage{Characters: count(10)})
	require.Equal(t, int64(10_000_000), u.Cost.Nanos, "10 characters cost 0.0002, under the minimum charge of 0.01")

	u, _ = b.Price("free", jobs.Translations, jobs.NativeUsage{Characters: count(10)})
	require.Equal(t, "request", u.Unit)
	require.Equal(t, 1.0, u.Quantity)
	require.Equal(t, int64(500_000_000), u.Cost.Nanos)
}

func TestPriceTokensWithSplitPrices(t *testing.T) {
	t.Parallel()
	b := priceBook(t, priceCatalog)

	u, priced := b.Price("p", jobs.LLMTasks, jobs.NativeUsage{InputTokens: count(10), OutputTokens: count(20)})
	require.True(t, priced)
	require.Equal(t, "token", u.Unit)
	require.Equal(t, 30.0, u.Quantity)
	require.Equal(t, int64(10*2500+20*10000), u.Cost.Nanos)
}

func TestPriceUnpriced(t *testing.T) {
	t.Parallel()
	b := priceBook(t, priceCatalog)

	u, priced := b.Price("free", jobs.Transcriptions, seconds(30))
	require.False(t, priced, "amount 0")
	require.Zero(t, u.Cost.Nanos)
	require.Equal(t, 0.5, u.Quantity)

	u, priced = b.Price("gone", jobs.LLMTasks, jobs.NativeUsage{InputTokens: count(1)})
	require.False(t, priced, "a provider not in the catalog")
	require.Equal(t, "token", u.Unit)

	_, priced = b.Price("p", jobs.Transcriptions, jobs.NativeUsage{})
	require.False(t, priced, "no media seconds")
}

func TestPriceVersion(t *testing.T) {
	t.Parallel()
	v := priceBook(t, priceCatalog).Version()
	require.Regexp(t, `^sha256:[0-9a-f]{8}$`, v)
	require.Equal(t, v, priceBook(t, priceCatalog).Version(), "stable")

	changed := strings.Replace(priceCatalog, "amount: 0.006", "amount: 0.007", 1)
	require.NotEqual(t, v, priceBook(t, changed).Version(), "a price changed")

	renamed := strings.Replace(priceCatalog, "name: Free", "name: Gratis", 1)
	require.Equal(t, v, priceBook(t, renamed).Version(), "only prices count")

	named := "price_version: 2026-12\n" + priceCatalog
	u, _ := priceBook(t, named).Price("p", jobs.Transcriptions, seconds(1))
	require.Equal(t, "2026-12", u.PriceVersion)
}

func TestPricingValidation(t *testing.T) {
	t.Parallel()
	bad := strings.Replace(priceCatalog, "{unit: per_minute, amount: 0.006, currency: USD}",
		"{unit: per_minute, amount: 0.006, currency: USD, input_amount: 0.1, minimum_charge: -1}", 1)
	_, err := providers.ParseCatalog([]byte(bad))
	require.ErrorContains(t, err, "input_amount and output_amount are for unit per_token only")
	require.ErrorContains(t, err, "pricing.minimum_charge: -1 is not valid")
}

func TestPriceCostJSON(t *testing.T) {
	t.Parallel()
	u, _ := priceBook(t, priceCatalog).Price("p", jobs.Transcriptions, seconds(1))
	body, err := json.Marshal(u)
	require.NoError(t, err)
	require.Contains(t, string(body), `"cost":{"amount":0.0001,"currency":"USD"}`)
	var back jobs.JobUsage
	require.NoError(t, json.Unmarshal(body, &back))
	require.Equal(t, u, back)
}
