package api

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// UsageStore sums the usage ledger, and reads budgets' use.
type UsageStore interface {
	UsageReport(ctx context.Context, q store.UsageQuery) (*store.UsageReport, error)
	budgetUseReader
}

// ScopeUsageRead lets a token read usage reports (docs/api.md, Usage
// report).
const ScopeUsageRead = "usage:read"

const (
	mimeCSV = "text/csv"
	// maxUsageRange is the longest period one report covers.
	maxUsageRange = 366 * 24 * time.Hour
)

// usageFilterNames are the filter[…] query parameters of GET /v1/usage.
var usageFilterNames = []string{"tenant", "service", "provider", "application"}

// usageHandler serves GET /v1/usage, GET /v1/budgets and the budgets'
// delivery logs.
type usageHandler struct {
	usage      UsageStore
	deliveries DeliveryStore
	tenants    TenantStore
	now        func() time.Time
}

func (h usageHandler) routes(v1 *gin.RouterGroup) {
	v1.GET("/usage", auth.RequireScope(ScopeUsageRead), handle(h.report))
	v1.GET("/budgets", auth.RequireScope(ScopeUsageRead), handle(h.budgets))
	v1.GET("/budgets/:id/webhook-deliveries", auth.RequireScope(ScopeUsageRead), handle(h.budgetDeliveries))
}

// report handles GET /v1/usage: the ledger's sums for the caller's tenant,
// or, for a super-admin, any tenant or every tenant.
func (h usageHandler) report(c *gin.Context) error {
	q, err := usageQuery(c, h.now().UTC())
	if err != nil {
		return err
	}
	rep, err := h.usage.UsageReport(c.Request.Context(), q)
	if err != nil {
		return err
	}
	c.Header("Vary", "Accept")
	if negotiate(c.GetHeader("Accept"), []string{mimeJSON, mimeCSV}, mimeJSON) == mimeCSV {
		body, err := usageCSV(q.GroupBy, rep.Rows)
		if err != nil {
			return err
		}
		c.Data(http.StatusOK, mimeCSV+"; charset=utf-8", body)
		return nil
	}
	data := make([]usageResource, len(rep.Rows))
	for i, r := range rep.Rows {
		data[i] = usageResource{Type: "usage", Attributes: usageAttributes{keys: q.GroupBy, row: r}}
	}
	totals := make([]usageTotal, len(rep.Totals))
	for i, t := range rep.Totals {
		totals[i] = usageTotal{Currency: t.Currency, Amount: json.Number(jobs.NanosDecimal(t.CostNanos)), Jobs: t.Jobs, Entries: t.Entries}
	}
	meta := usageMeta{From: q.From.Format(time.RFC3339Nano), To: q.To.Format(time.RFC3339Nano), GroupBy: q.GroupBy, Totals: totals}
	if q.Tenant != "" {
		meta.Tenant = &q.Tenant
	}
	if meta.GroupBy == nil {
		meta.GroupBy = []store.UsageKey{}
	}
	c.JSON(http.StatusOK, gin.H{"data": data, "meta": meta})
	return nil
}

type usageResource struct {
	Type       string          `json:"type"`
	Attributes usageAttributes `json:"attributes"`
}

type usageMeta struct {
	From    string           `json:"from"`
	To      string           `json:"to"`
	Tenant  *string          `json:"tenant"`
	GroupBy []store.UsageKey `json:"group_by"`
	Totals  []usageTotal     `json:"totals"`
}

type usageTotal struct {
	Currency string      `json:"currency"`
	Amount   json.Number `json:"amount"`
	Jobs     int64       `json:"jobs"`
	Entries  int64       `json:"entries"`
}

// usageAttributes shows a row: the grouped keys in their order (null for
// an empty application or provider), unit, quantity, jobs, entries, cost.
type usageAttributes struct {
	keys []store.UsageKey
	row  store.UsageRow
}

func (a usageAttributes) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	member := func(name string, v any) {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.Write(encodeJSON(name))
		b.WriteByte(':')
		b.Write(encodeJSON(v))
	}
	for _, k := range a.keys {
		if v := a.row.Key(k); v != "" {
			member(string(k), v)
		} else {
			member(string(k), nil)
		}
	}
	if !slices.Contains(a.keys, store.UsageByUnit) && a.row.Unit != "" {
		member("unit", a.row.Unit)
	}
	member("quantity", usageQuantity(a.row.Quantity))
	member("jobs", a.row.Jobs)
	member("entries", a.row.Entries)
	member("cost", jobs.Cost{Nanos: a.row.CostNanos, Currency: a.row.Currency})
	return []byte("{" + b.String() + "}"), nil
}

// encodeJSON encodes a value that cannot fail to encode.
func encodeJSON(v any) []byte {
	out, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return out
}

// usageQuantity rounds a sum of quantities to their nine decimals.
func usageQuantity(q float64) float64 { return math.Round(q*1e9) / 1e9 }

// usageCSV writes rows as CSV: a header, then the grouped keys (unit
// aside), quantity, unit, jobs, cost_amount and currency.
func usageCSV(groupBy []store.UsageKey, rows []store.UsageRow) ([]byte, error) {
	var keys []store.UsageKey
	for _, k := range groupBy {
		if k != store.UsageByUnit {
			keys = append(keys, k)
		}
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	header := make([]string, 0, len(keys)+5)
	for _, k := range keys {
		header = append(header, string(k))
	}
	_ = w.Write(append(header, "quantity", "unit", "jobs", "cost_amount", "currency"))
	for _, r := range rows {
		record := make([]string, 0, len(header)+5)
		for _, k := range keys {
			record = append(record, r.Key(k))
		}
		_ = w.Write(append(record, strconv.FormatFloat(usageQuantity(r.Quantity), 'f', -1, 64), r.Unit,
			strconv.FormatInt(r.Jobs, 10), jobs.NanosDecimal(r.CostNanos), r.Currency))
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// usageQuery reads the report's query parameters (docs/api.md, Usage
// report): the tenant, the filters, the period and the grouping.
func usageQuery(c *gin.Context, now time.Time) (store.UsageQuery, error) {
	var q store.UsageQuery
	values := map[string]string{}
	query := c.Request.URL.Query()
	names := make([]string, 0, len(query))
	for name := range query {
		names = append(names, name)
	}
	slices.Sort(names) // the same request always names the same culprit
	for _, name := range names {
		field, isFilter := strings.CutPrefix(name, "filter[")
		if isFilter {
			field, isFilter = strings.CutSuffix(field, "]")
			if !isFilter || !slices.Contains(usageFilterNames, field) {
				return q, invalidQuery(name, "unknown filter; the filters are filter[%s]", strings.Join(usageFilterNames, "], filter["))
			}
		} else if name != "from" && name != "to" && name != "group_by" {
			continue
		}
		if len(query[name]) > 1 {
			return q, invalidQuery(name, "must be given once")
		}
		value := query[name][0]
		if !utf8.ValidString(value) || strings.ContainsRune(value, 0) {
			return q, invalidQuery(name, "must be UTF-8 text without NUL")
		}
		if isFilter && value == "" {
			return q, invalidQuery(name, "must not be empty")
		}
		values[name] = value
	}

	tenant, every, err := usageTenant(c, values)
	if err != nil {
		return q, err
	}
	q.Tenant = tenant
	if v, ok := values["filter[service]"]; ok {
		if _, known := jobs.LookupService(v); !known {
			return q, invalidQuery("filter[service]", "must be one of %s", serviceIDs())
		}
		q.Service = jobs.ServiceID(v)
	}
	q.Provider = values["filter[provider]"]
	if v, ok := values["filter[application]"]; ok {
		if !auth.SlugPattern.MatchString(v) {
			return q, invalidQuery("filter[application]", "must be an application name (pattern %s)", auth.SlugPattern)
		}
		q.Application = &v
	}
	if q.From, q.To, err = usagePeriod(values, now); err != nil {
		return q, err
	}
	q.GroupBy, err = usageGroupBy(values["group_by"], every)
	return q, err
}

// usageTenant is the tenant a report covers, "" with every true for all
// of them. Only a super-admin may name a tenant or see every one; others
// see the tenant they act as (the token's, or X-Effective-Tenant-Id's).
func usageTenant(c *gin.Context, values map[string]string) (tenant string, every bool, err error) {
	tenant, _, err = auth.EffectiveIdentity(c)
	if err != nil {
		return "", false, err
	}
	requested, named := values["filter[tenant]"]
	acting := strings.TrimSpace(c.GetHeader(auth.HeaderEffectiveTenant)) != ""
	switch {
	case named && !auth.CallerFrom(c).IsSuperAdmin():
		return "", false, apierror.Forbidden("query filter[tenant]: needs the %s role; without it the report shows the token's tenant", auth.RoleSuperAdmin)
	case named && acting && requested != tenant:
		return "", false, apierror.Forbidden("query filter[tenant]: acting as tenant %q (%s), the report shows that tenant only", tenant, auth.HeaderEffectiveTenant)
	case named:
		if !auth.SlugPattern.MatchString(requested) {
			return "", false, invalidQuery("filter[tenant]", "must be a tenant slug (pattern %s)", auth.SlugPattern)
		}
		return requested, false, nil
	case auth.CallerFrom(c).IsSuperAdmin() && !acting:
		return "", true, nil
	case tenant == "":
		return "", false, apierror.Forbidden("the token carries no tenant_id claim; only a %s may read every tenant's usage", auth.RoleSuperAdmin)
	}
	return tenant, false, nil
}

// usagePeriod is [from, to): by default the current UTC calendar month so
// far; from alone runs to now; to alone starts at the start of its month.
func usagePeriod(values map[string]string, now time.Time) (from, to time.Time, err error) {
	to = now
	if v, ok := values["to"]; ok {
		if to, err = usageTime("to", v); err != nil {
			return from, to, err
		}
	}
	last := to.Add(-time.Nanosecond)
	from = time.Date(last.Year(), last.Month(), 1, 0, 0, 0, 0, time.UTC)
	if v, ok := values["from"]; ok {
		if from, err = usageTime("from", v); err != nil {
			return from, to, err
		}
	}
	// Name the parameter the caller gave, to when both.
	name := "to"
	if _, ok := values["to"]; !ok {
		name = "from"
	}
	switch {
	case !from.Before(to):
		return from, to, invalidQuery(name, "the period is empty: from (%s) must be before to (%s)", from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
	case to.Sub(from) > maxUsageRange:
		return from, to, invalidQuery(name, "the period from %s to %s is longer than 366 days", from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
	}
	return from, to, nil
}

// usageTime reads an RFC 3339 timestamp or a date (UTC midnight).
func usageTime(name, v string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	return time.Time{}, invalidQuery(name, "must be an RFC 3339 timestamp (2026-11-01T00:00:00Z; a + in an offset sent as %%2B) or a date (2026-11-01, UTC)")
}

// usageGroupBy reads group_by, a comma-separated list of keys; tenant only
// when the report covers every tenant.
func usageGroupBy(v string, every bool) ([]store.UsageKey, error) {
	if v == "" {
		return nil, nil
	}
	var keys []store.UsageKey
	allowed := store.UsageKeys()
	if !every {
		allowed = slices.DeleteFunc(allowed, func(k store.UsageKey) bool { return k == store.UsageByTenant })
	}
	for _, part := range strings.Split(v, ",") {
		k := store.UsageKey(strings.TrimSpace(part))
		switch {
		case k == store.UsageByTenant && !every:
			return nil, invalidQuery("group_by", "tenant is only for a %s's report over every tenant", auth.RoleSuperAdmin)
		case !slices.Contains(allowed, k):
			return nil, invalidQuery("group_by", "%q is not a key; use a comma-separated list of %s", string(k), usageKeyList(allowed))
		case slices.Contains(keys, k):
			return nil, invalidQuery("group_by", "names %s twice", k)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func usageKeyList(keys []store.UsageKey) string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// invalidQuery is the 422 naming a query parameter.
func invalidQuery(name, format string, args ...any) error {
	return apierror.New(http.StatusUnprocessableEntity, apierror.CodeValidation, "query %s: %s", name, fmt.Sprintf(format, args...))
}
