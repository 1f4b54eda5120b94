package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/strictjson"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/gin-gonic/gin"
)

// Limits of a tenant's budgets (docs/api.md, Budgets).
const (
	maxBudgets          = 20
	maxBudgetThresholds = 10
	ptrBudgets          = ptrAttributes + "/budgets"
	ptrNotificationURL  = ptrAttributes + "/notification_url"
)

var (
	budgetIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)
	// budgetUnits are the usage units a quantity budget may limit.
	budgetUnits = []string{"minute", "character", "page", "request", "token"}
)

// budgetView is a budget as the API shows it.
type budgetView struct {
	ID          string      `json:"id"`
	Application *string     `json:"application"`
	APIKey      *string     `json:"api_key"`
	Period      string      `json:"period"`
	Limit       budgetLimit `json:"limit"`
	Thresholds  []int       `json:"thresholds"`
}

type budgetLimit struct {
	Amount   *json.Number `json:"amount,omitempty"`
	Currency string       `json:"currency,omitempty"`
	Quantity *json.Number `json:"quantity,omitempty"`
	Unit     string       `json:"unit,omitempty"`
}

func budgetViews(budgets []store.Budget) []budgetView {
	out := make([]budgetView, 0, len(budgets))
	for _, b := range budgets {
		n := json.Number(fromNanos(b.Limit))
		v := budgetView{ID: b.ID, Application: b.Application, APIKey: b.APIKey, Period: b.Period, Thresholds: b.Thresholds}
		if v.Thresholds == nil {
			v.Thresholds = []int{}
		}
		if b.Currency != "" {
			v.Limit = budgetLimit{Amount: &n, Currency: b.Currency}
		} else {
			v.Limit = budgetLimit{Quantity: &n, Unit: b.Unit}
		}
		out = append(out, v)
	}
	return out
}

// fromNanos is n/1e9 as a decimal.
func fromNanos(n int64) string {
	return strings.TrimRight(strings.TrimRight(new(big.Rat).SetFrac64(n, 1e9).FloatString(9), "0"), ".")
}

// toNanos is a positive decimal number of at most nine decimals in 1e-9.
func toNanos(raw json.RawMessage) (int64, bool) {
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(n.String())
	if !ok || r.Sign() <= 0 {
		return 0, false
	}
	r.Mul(r, big.NewRat(1e9, 1))
	if !r.IsInt() || !r.Num().IsInt64() {
		return 0, false
	}
	return r.Num().Int64(), true
}

// parseBudgets validates attributes.budgets: a list that replaces the
// tenant's budgets; null or [] removes them.
func parseBudgets(raw json.RawMessage) ([]store.Budget, error) {
	if strictjson.Absent(raw) {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, apierror.Validation(ptrBudgets, "must be a list of budgets, or null")
	}
	if len(items) > maxBudgets {
		return nil, apierror.Validation(ptrBudgets, "has %d budgets; at most %d are allowed", len(items), maxBudgets)
	}
	out := make([]store.Budget, 0, len(items))
	seen := map[string]bool{}
	for i, item := range items {
		pointer := fmt.Sprintf("%s/%d", ptrBudgets, i)
		b, err := parseBudget(item, pointer)
		if err != nil {
			return nil, err
		}
		if seen[b.ID] {
			return nil, apierror.Validation(pointer+"/id", "%q names another budget too; ids must differ", b.ID)
		}
		seen[b.ID] = true
		out = append(out, b)
	}
	return out, nil
}

func parseBudget(raw json.RawMessage, pointer string) (store.Budget, error) {
	var b store.Budget
	members, err := object(raw, pointer)
	if err != nil {
		return b, err
	}
	if members == nil {
		return b, apierror.Validation(pointer, "must be an object")
	}
	if err := onlyKeys(members, pointer, "id", "application", "api_key", "period", "limit", "thresholds"); err != nil {
		return b, err
	}
	if v, ok := members["application"]; ok && !strictjson.Absent(v) {
		var app string
		if json.Unmarshal(v, &app) != nil || !auth.SlugPattern.MatchString(app) {
			return b, apierror.Validation(pointer+"/application", "must be an application name (pattern %s) or null for the whole tenant", auth.SlugPattern)
		}
		b.Application = &app
	}
	if v, ok := members["api_key"]; ok && !strictjson.Absent(v) {
		var key string
		// The id a job's caller records (docs/api.md, API keys).
		if json.Unmarshal(v, &key) != nil || key == "" || jobs.CallerKey(jobs.KeyCaller(key)) != key {
			return b, apierror.Validation(pointer+"/api_key", "must be an API key's id (16 characters of a-z and 2-7, the part of the key after gwk_) or null for every caller")
		}
		b.APIKey = &key
	}
	if json.Unmarshal(members["period"], &b.Period) != nil || (b.Period != store.PeriodDay && b.Period != store.PeriodMonth) {
		return b, apierror.Validation(pointer+"/period", "is required: day or month (UTC)")
	}
	if err := parseBudgetLimit(members["limit"], pointer+"/limit", &b); err != nil {
		return b, err
	}
	if v, ok := members["thresholds"]; ok && !strictjson.Absent(v) {
		if json.Unmarshal(v, &b.Thresholds) != nil || len(b.Thresholds) > maxBudgetThresholds {
			return b, apierror.Validation(pointer+"/thresholds", "must be a list of at most %d whole percents", maxBudgetThresholds)
		}
		for i, t := range b.Thresholds {
			if t < 1 || t > 100 || (i > 0 && t <= b.Thresholds[i-1]) {
				return b, apierror.Validation(fmt.Sprintf("%s/thresholds/%d", pointer, i), "must be a whole percent from 1 to 100, the list ascending")
			}
		}
	}
	if v, ok := members["id"]; ok && !strictjson.Absent(v) {
		if json.Unmarshal(v, &b.ID) != nil || !budgetIDPattern.MatchString(b.ID) {
			return b, apierror.Validation(pointer+"/id", "must be 1 to 63 lowercase letters, digits and hyphens (pattern %s)", budgetIDPattern)
		}
	} else {
		b.ID = defaultBudgetID(b)
	}
	return b, nil
}

// defaultBudgetID names a budget given without an id by what it limits:
// web-month-usd, day-minute, <key id>-day-token.
func defaultBudgetID(b store.Budget) string {
	var parts []string
	if b.Application != nil {
		parts = append(parts, *b.Application)
	}
	if b.APIKey != nil {
		parts = append(parts, *b.APIKey)
	}
	parts = append(parts, b.Period, strings.ToLower(b.Currency+b.Unit))
	return strings.Join(parts, "-")
}

func parseBudgetLimit(raw json.RawMessage, pointer string, b *store.Budget) error {
	members, err := object(raw, pointer)
	if err != nil {
		return err
	}
	if members == nil {
		return apierror.Validation(pointer, "is required: {amount, currency} or {quantity, unit}")
	}
	if err := onlyKeys(members, pointer, "amount", "currency", "quantity", "unit"); err != nil {
		return err
	}
	_, amount := members["amount"]
	_, quantity := members["quantity"]
	var ok bool
	switch {
	case amount && !quantity:
		if b.Limit, ok = toNanos(members["amount"]); !ok {
			return apierror.Validation(pointer+"/amount", "must be a positive number of at most nine decimals")
		}
		if _, has := members["unit"]; has {
			return apierror.Validation(pointer+"/unit", "goes with quantity, not amount")
		}
		if json.Unmarshal(members["currency"], &b.Currency) != nil || !currencyPattern.MatchString(b.Currency) {
			return apierror.Validation(pointer+"/currency", "is required with amount: an ISO 4217 code (USD)")
		}
	case quantity && !amount:
		if b.Limit, ok = toNanos(members["quantity"]); !ok {
			return apierror.Validation(pointer+"/quantity", "must be a positive number of at most nine decimals")
		}
		if _, has := members["currency"]; has {
			return apierror.Validation(pointer+"/currency", "goes with amount, not quantity")
		}
		if json.Unmarshal(members["unit"], &b.Unit) != nil || !containsString(budgetUnits, b.Unit) {
			return apierror.Validation(pointer+"/unit", "is required with quantity: one of %s", strings.Join(budgetUnits, ", "))
		}
	default:
		return apierror.Validation(pointer, "must give either amount and currency, or quantity and unit")
	}
	return nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// parseNotificationURL validates attributes.notification_url with the
// rules of a job's webhook URL; null clears it.
func parseNotificationURL(raw json.RawMessage) (string, error) {
	if strictjson.Absent(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil || s == "" {
		return "", apierror.Validation(ptrNotificationURL, "must be an absolute http or https URL, or null")
	}
	if len(s) > MaxWebhookURLBytes {
		return "", apierror.Validation(ptrNotificationURL, "is %d bytes; it is limited to %d", len(s), MaxWebhookURLBytes)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", apierror.Validation(ptrNotificationURL, "must be an absolute http or https URL")
	}
	if u.User != nil {
		return "", apierror.Validation(ptrNotificationURL, "must not carry credentials")
	}
	return s, nil
}

// budgetUseReader reads what a budget has used in its current period.
type budgetUseReader interface {
	BudgetUsed(ctx context.Context, tenant string, b store.Budget, now time.Time) (store.BudgetUse, error)
}

// budgetStatus is a budget with what it has used in the current period
// (GET /v1/budgets).
type budgetStatus struct {
	budgetView
	Current budgetCurrent `json:"current"`
}

// budgetCurrent is a budget's current period: settled (billed), reserved
// (estimates of jobs not finished), what is left, and the share used, in
// the budget's currency or unit.
type budgetCurrent struct {
	PeriodStart time.Time   `json:"period_start"`
	PeriodEnd   time.Time   `json:"period_end"`
	Settled     json.Number `json:"settled"`
	Reserved    json.Number `json:"reserved"`
	Remaining   json.Number `json:"remaining"`
	UsedPercent float64     `json:"used_percent"`
}

// budgets handles GET /v1/budgets: the tenant's budgets and what each has
// used this period (docs/api.md, Budgets).
func (h usageHandler) budgets(c *gin.Context) error {
	tenant, err := h.budgetTenant(c)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	now := h.now().UTC()
	views := budgetViews(tenant.Budgets)
	out := make([]gin.H, len(views))
	for i, b := range tenant.Budgets {
		used, err := h.usage.BudgetUsed(ctx, tenant.ID, b, now)
		if err != nil {
			return err
		}
		start := b.PeriodStart(now)
		spent := used.Settled + used.Reserved
		current := budgetCurrent{PeriodStart: start, PeriodEnd: b.PeriodEnd(start),
			Settled: json.Number(fromNanos(used.Settled)), Reserved: json.Number(fromNanos(used.Reserved)),
			Remaining:   json.Number(fromNanos(max(b.Limit-spent, 0))),
			UsedPercent: math.Round(float64(spent)*10000/float64(b.Limit)) / 100}
		out[i] = gin.H{"type": "budget", "id": b.ID, "attributes": budgetStatus{budgetView: views[i], Current: current}}
	}
	c.JSON(http.StatusOK, gin.H{"data": out, "meta": gin.H{"tenant": tenant.ID, "at": now}})
	return nil
}

// budgetTenant is the tenant whose budgets a request reads: the caller's,
// or the one a super-admin names with filter[tenant], required of one.
func (h usageHandler) budgetTenant(c *gin.Context) (*store.Tenant, error) {
	values := map[string]string{}
	for name, v := range c.Request.URL.Query() {
		if strings.HasPrefix(name, "filter[") && name != "filter[tenant]" {
			return nil, invalidQuery(name, "unknown filter; the only filter is filter[tenant]")
		}
		if name == "filter[tenant]" {
			if len(v) > 1 || v[0] == "" {
				return nil, invalidQuery(name, "must be given once, not empty")
			}
			values[name] = v[0]
		}
	}
	tenantID, every, err := usageTenant(c, values)
	if err != nil {
		return nil, err
	}
	if every {
		return nil, invalidQuery("filter[tenant]", "is required of a super-admin: budgets belong to one tenant")
	}
	tenant, err := h.tenants.GetTenant(c.Request.Context(), tenantID)
	if errors.Is(err, store.ErrNotFound) {
		return &store.Tenant{ID: tenantID}, nil // no record: no budgets
	}
	return tenant, err
}
