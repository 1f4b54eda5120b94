package providers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// PriceBook prices jobs' usage with the catalog's capability pricing
// (docs/api.md, Usage and cost). Costs are exact, in nanos (1e-9 of the
// currency).
type PriceBook struct {
	catalog *Catalog
	version string
}

// NewPriceBook is the price book of c, which must not change afterwards.
func NewPriceBook(c *Catalog) *PriceBook {
	b := &PriceBook{catalog: c, version: c.PriceVersion}
	if b.version == "" {
		b.version = pricesHash(c)
	}
	return b
}

// Version is the catalog's price_version, else "sha256:" and the first
// eight hex digits of a hash of every pricing entry.
func (b *PriceBook) Version() string { return b.version }

// pricesHash hashes the pricing entries in a stable order.
func pricesHash(c *Catalog) string {
	var lines []string
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	opt := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return f(*v)
	}
	for _, p := range c.Providers {
		for sid, capab := range p.Services {
			if capab == nil {
				continue
			}
			pr := capab.Pricing
			lines = append(lines, fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%t", p.ID, sid, pr.Unit, f(pr.Amount),
				pr.Currency, opt(pr.InputAmount), opt(pr.OutputAmount), f(pr.MinimumCharge), pr.RoundUpToMinute))
		}
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return "sha256:" + hex.EncodeToString(sum[:4])
}

// Usage units of a JobUsage, one per pricing unit.
var usageUnits = map[string]string{
	PerMinute: "minute", PerCharacter: "character", PerPage: "page", PerRequest: "request", PerToken: "token",
}

// serviceUnits is the pricing unit of a service whose provider has no
// pricing for it.
var serviceUnits = map[jobs.UsageUnit]string{
	jobs.UsageAudioSeconds: PerMinute, jobs.UsageVideoSeconds: PerMinute,
	jobs.UsageCharacters: PerCharacter, jobs.UsageTokens: PerToken,
}

// Price costs usage n of a job the provider ran for the service. priced
// is false when the cost is zero because nothing prices the job: the
// provider or its capability is not in the catalog, every amount is 0, or
// the job lacks the measure the unit needs (a per_token transcription
// whose provider reported no tokens). per_page counts the pages when
// known, else one per job; per_request counts one.
func (b *PriceBook) Price(provider string, service jobs.ServiceID, n jobs.NativeUsage) (u jobs.JobUsage, priced bool) {
	u.Native, u.PriceVersion = n, b.version
	var pr Pricing
	if p, ok := b.catalog.Lookup(provider); ok && p.Services[service] != nil {
		pr = p.Services[service].Pricing
	} else {
		svc, _ := jobs.ServiceOf(service)
		pr = Pricing{Unit: serviceUnits[svc.Usage], Currency: "USD"}
	}
	u.Unit, u.Cost.Currency = usageUnits[pr.Unit], pr.Currency

	amount := decimal(pr.Amount)
	var qty, cost *big.Rat
	switch pr.Unit {
	case PerMinute:
		if n.MediaSeconds != nil {
			qty = new(big.Rat).Quo(decimal(math.Max(*n.MediaSeconds, 0)), big.NewRat(60, 1))
			if pr.RoundUpToMinute {
				qty = new(big.Rat).SetInt(ceil(qty))
			}
		}
	case PerCharacter:
		if n.Characters != nil {
			qty = big.NewRat(*n.Characters, 1)
		}
	case PerPage:
		qty = big.NewRat(1, 1)
		if n.Pages != nil {
			qty = big.NewRat(*n.Pages, 1)
		}
	case PerRequest:
		qty = big.NewRat(1, 1)
	case PerToken:
		if n.InputTokens != nil || n.OutputTokens != nil {
			in, out := big.NewRat(deref(n.InputTokens), 1), big.NewRat(deref(n.OutputTokens), 1)
			qty = new(big.Rat).Add(in, out)
			cost = new(big.Rat).Add(
				new(big.Rat).Mul(in, decimalOr(pr.InputAmount, pr.Amount)),
				new(big.Rat).Mul(out, decimalOr(pr.OutputAmount, pr.Amount)))
		}
	}
	if qty == nil {
		return u, false
	}
	if cost == nil {
		cost = new(big.Rat).Mul(qty, amount)
	}
	if minimum := decimal(pr.MinimumCharge); cost.Cmp(minimum) < 0 {
		cost = minimum
	}
	u.Quantity, _ = qty.Float64()
	u.Quantity = math.Round(u.Quantity*1e9) / 1e9
	u.Cost.Nanos = nanos(cost)
	priced = pr.Amount > 0 || pr.MinimumCharge > 0 ||
		(pr.InputAmount != nil && *pr.InputAmount > 0) || (pr.OutputAmount != nil && *pr.OutputAmount > 0)
	return u, priced
}

// decimal is v as the decimal it was written as: 0.006 is 6/1000, not the
// float closest to it.
func decimal(v float64) *big.Rat {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(v, 'g', -1, 64))
	if !ok {
		return new(big.Rat)
	}
	return r
}

func decimalOr(v *float64, fallback float64) *big.Rat {
	if v != nil {
		return decimal(*v)
	}
	return decimal(fallback)
}

func deref(v *int64) int64 {
	if v == nil {
		return 0
	}
	return *v
}

// nanos is r in nanos, rounded half away from zero.
func nanos(r *big.Rat) int64 {
	n := new(big.Rat).Mul(r, big.NewRat(1e9, 1))
	num, den := new(big.Int).Abs(n.Num()), n.Denom()
	q := new(big.Int).Quo(new(big.Int).Add(new(big.Int).Lsh(num, 1), den), new(big.Int).Lsh(den, 1))
	if n.Sign() < 0 {
		q.Neg(q)
	}
	if !q.IsInt64() {
		return math.MaxInt64
	}
	return q.Int64()
}

// ceil is the least integer >= r (r >= 0).
func ceil(r *big.Rat) *big.Int {
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

// Estimates prices an estimated usage n at every provider of the catalog
// that offers the service, or at provider alone when the job names one;
// budgets reserve the highest (docs/api.md, Budgets).
func (b *PriceBook) Estimates(provider string, service jobs.ServiceID, n jobs.NativeUsage) []jobs.JobUsage {
	var out []jobs.JobUsage
	for _, p := range b.catalog.Providers {
		if (provider != "" && p.ID != provider) || p.Services[service] == nil {
			continue
		}
		u, _ := b.Price(p.ID, service, n)
		out = append(out, u)
	}
	if len(out) == 0 {
		u, _ := b.Price(provider, service, n)
		out = append(out, u)
	}
	return out
}
