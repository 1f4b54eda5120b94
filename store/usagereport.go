package store

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// UsageKey is what a usage report groups ledger entries by (docs/api.md,
// Usage report).
type UsageKey string

// The keys a usage report may group by.
const (
	UsageByTenant      UsageKey = "tenant"
	UsageByService     UsageKey = "service"
	UsageByProvider    UsageKey = "provider"
	UsageByApplication UsageKey = "application"
	// UsageByAPIKey is the API key that created the jobs (docs/api.md,
	// API keys); empty for tokens' jobs.
	UsageByAPIKey UsageKey = "api_key"
	UsageByUnit   UsageKey = "unit"
	// UsageByDay is the UTC day an entry was billed, YYYY-MM-DD.
	UsageByDay UsageKey = "day"
)

// UsageKeys are the keys a report may group by, in the order docs/api.md
// lists them.
func UsageKeys() []UsageKey {
	return []UsageKey{UsageByService, UsageByProvider, UsageByApplication, UsageByAPIKey, UsageByUnit, UsageByDay, UsageByTenant}
}

// UsageQuery selects the ledger entries billed in [From, To), of Tenant
// ("" for every tenant) and of the service, provider and application when
// set, and groups them by GroupBy and currency.
type UsageQuery struct {
	Tenant      string
	Service     jobs.ServiceID
	Provider    string
	Application *string
	From, To    time.Time
	GroupBy     []UsageKey
}

// UsageRow is the usage of one group of a report in one currency. Keys not
// grouped by are empty, but Unit is set when the group's entries share one
// unit. Quantity adds the entries' quantities, whatever their units.
type UsageRow struct {
	Tenant      string
	Service     jobs.ServiceID
	Provider    string
	Application string
	APIKey      string `gorm:"column:api_key"`
	Unit        string
	Day         string
	Currency    string
	Quantity    float64
	// Jobs counts distinct jobs; Entries counts attempts.
	Jobs      int64
	Entries   int64
	CostNanos int64
}

// Key is the row's value of k.
func (r UsageRow) Key(k UsageKey) string {
	switch k {
	case UsageByTenant:
		return r.Tenant
	case UsageByService:
		return string(r.Service)
	case UsageByProvider:
		return r.Provider
	case UsageByApplication:
		return r.Application
	case UsageByAPIKey:
		return r.APIKey
	case UsageByUnit:
		return r.Unit
	case UsageByDay:
		return r.Day
	}
	return ""
}

// UsageReport is a report's rows, ordered by their keys and currency, and
// its totals, one per currency.
type UsageReport struct {
	Rows   []UsageRow
	Totals []UsageRow
}

// UsageReport adds up the ledger entries q selects, by q.GroupBy and
// currency; the costs are exact sums of nanos.
func (s *UsageStore) UsageReport(ctx context.Context, q UsageQuery) (*UsageReport, error) {
	rows, err := s.usageGroups(ctx, q, q.GroupBy)
	if err != nil {
		return nil, err
	}
	totals, err := s.usageGroups(ctx, q, nil)
	if err != nil {
		return nil, err
	}
	return &UsageReport{Rows: rows, Totals: totals}, nil
}

// usageGroups is one grouped sum of the entries q selects.
func (s *UsageStore) usageGroups(ctx context.Context, q UsageQuery, groupBy []UsageKey) ([]UsageRow, error) {
	var keys, groups []string
	for _, k := range groupBy {
		expr := string(k)
		if k == UsageByDay {
			expr = s.usageDayExpr()
		}
		keys, groups = append(keys, expr+" AS "+string(k)), append(groups, expr)
	}
	groups = append(groups, "currency")
	sel := append(keys, "currency", "COUNT(*) AS entries", "COUNT(DISTINCT job_id) AS jobs",
		"COALESCE(SUM(quantity), 0) AS quantity", "CAST(COALESCE(SUM(cost_nanos), 0) AS BIGINT) AS cost_nanos")
	byUnit := slices.Contains(groupBy, UsageByUnit)
	if !byUnit {
		sel = append(sel, "MIN(unit) AS unit_min", "MAX(unit) AS unit_max")
	}
	db := s.db.WithContext(ctx).Table("usage_ledger").Select(strings.Join(sel, ", ")).
		Where("billed_at >= ? AND billed_at < ?", q.From.UTC(), q.To.UTC())
	if q.Tenant != "" {
		db = db.Where("tenant = ?", q.Tenant)
	}
	if q.Service != "" {
		db = db.Where("service = ?", q.Service)
	}
	if q.Provider != "" {
		db = db.Where("provider = ?", q.Provider)
	}
	if q.Application != nil {
		db = db.Where("application = ?", *q.Application)
	}
	var scanned []struct {
		UsageRow
		UnitMin, UnitMax string
	}
	group := strings.Join(groups, ", ")
	if err := db.Group(group).Order(group).Scan(&scanned).Error; err != nil {
		return nil, err
	}
	rows := make([]UsageRow, len(scanned))
	for i, r := range scanned {
		rows[i] = r.UsageRow
		if !byUnit && r.UnitMin == r.UnitMax {
			rows[i].Unit = r.UnitMin
		}
	}
	return rows, nil
}

// usageDayExpr is the UTC day of billed_at as YYYY-MM-DD. SQLite holds
// times as text, written in UTC (SaveJobUsage), that start with the day.
func (s *UsageStore) usageDayExpr() string {
	if s.dialect == "postgres" {
		return "to_char(billed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
	}
	return "substr(billed_at, 1, 10)"
}
