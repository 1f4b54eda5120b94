package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/internal/strictjson"
	"github.com/ai-job-gateway/gateway/policy"
	"github.com/ai-job-gateway/gateway/store"
)

// TenantStore keeps tenant records.
type TenantStore interface {
	CreateTenant(ctx context.Context, t *store.Tenant) error
	GetTenant(ctx context.Context, id string) (*store.Tenant, error)
	UpdateTenant(ctx context.Context, id string, update func(*store.Tenant) error) (*store.Tenant, error)
	ListTenants(ctx context.Context, offset, limit int) ([]store.Tenant, int64, error)
}

// policyReader loads a policy.
type policyReader interface {
	GetPolicy(ctx context.Context, id string) (policy.Policy, error)
}

// tenantsHandler serves tenant administration (docs/api.md, Tenants).
type tenantsHandler struct {
	tenants TenantStore
	// policies and catalog check the default policy and providers named.
	policies policyReader
	catalog  providerLookup
	// retention is the deployment's, shown as a tenant's effective values.
	retention store.RetentionDefaults
	now       func() time.Time
}

// routes registers the tenant operations on the authenticated /v1 group.
func (h tenantsHandler) routes(v1 *gin.RouterGroup) {
	v1.GET("/tenants", auth.RequireSuperAdmin(), handle(h.list))
	v1.POST("/tenants", auth.RequireSuperAdmin(), handle(h.create))
	v1.GET("/tenants/:slug", handle(h.get))
	v1.PATCH("/tenants/:slug", auth.RequireSuperAdmin(), handle(h.update))
}

type tenantResource struct {
	ID         string           `json:"id"`
	Type       string           `json:"type"`
	Attributes tenantAttributes `json:"attributes"`
}

type tenantAttributes struct {
	DefaultPolicyID *string                 `json:"default_policy_id"`
	Services        map[string]store.Access `json:"services"`
	Providers       map[string]store.Access `json:"providers"`
	Retention       retentionView           `json:"retention"`
	// FairnessWeight is the tenant's weight, the default (1) when it sets
	// none (docs/operations.md, Fairness between tenants).
	FairnessWeight float64 `json:"fairness_weight"`
	// Budgets and NotificationURL: docs/api.md, Budgets.
	Budgets         []budgetView `json:"budgets"`
	NotificationURL *string      `json:"notification_url"`
	// MaxInFlight bounds the tenant's jobs not yet finished; null: no
	// bound (docs/api.md, Tenants).
	MaxInFlight *int `json:"max_in_flight"`
}

// retentionView is a tenant's retention as set (null: the deployment
// default) and as it applies (null: kept forever), in seconds.
type retentionView struct {
	ResultsSeconds *int64 `json:"results_seconds"`
	JobsSeconds    *int64 `json:"jobs_seconds"`
	Effective      struct {
		ResultsSeconds *int64 `json:"results_seconds"`
		JobsSeconds    *int64 `json:"jobs_seconds"`
	} `json:"effective"`
}

// Bounds of a tenant's retention settings, in seconds: a minute (short
// enough for tests) to ten years.
const (
	minRetentionSeconds = 60
	maxRetentionSeconds = 315360000
)

func (h tenantsHandler) tenantView(t *store.Tenant) tenantResource {
	services, providerAccess := t.Services, t.Providers
	if services == nil {
		services = map[string]store.Access{}
	}
	if providerAccess == nil {
		providerAccess = map[string]store.Access{}
	}
	retention := retentionView{ResultsSeconds: seconds(t.Retention.Results), JobsSeconds: seconds(t.Retention.Jobs)}
	results, jobs := t.EffectiveRetention(h.retention)
	if results > 0 {
		retention.Effective.ResultsSeconds = seconds(&results)
	}
	if jobs > 0 {
		retention.Effective.JobsSeconds = seconds(&jobs)
	}
	var notificationURL *string
	if t.NotificationURL != "" {
		notificationURL = &t.NotificationURL
	}
	return tenantResource{ID: t.ID, Type: "tenant", Attributes: tenantAttributes{
		DefaultPolicyID: t.DefaultPolicyID, Services: services, Providers: providerAccess, Retention: retention,
		FairnessWeight: t.Fairness(), Budgets: budgetViews(t.Budgets), NotificationURL: notificationURL, MaxInFlight: t.MaxInFlight,
	}}
}

// seconds is a duration in whole seconds, rounded up; nil stays nil.
func seconds(d *time.Duration) *int64 {
	if d == nil {
		return nil
	}
	s := int64((*d + time.Second - 1) / time.Second)
	return &s
}

// list handles GET /v1/tenants (super-admin).
func (h tenantsHandler) list(c *gin.Context) error {
	page, err := parsePage(c)
	if err != nil {
		return err
	}
	list, total, err := h.tenants.ListTenants(c.Request.Context(), page.Offset(), page.Size)
	if err != nil {
		return err
	}
	out := make([]tenantResource, 0, len(list))
	for i := range list {
		out = append(out, h.tenantView(&list[i]))
	}
	c.JSON(http.StatusOK, collection(c, out, page, total))
	return nil
}

// create handles POST /v1/tenants (super-admin).
func (h tenantsHandler) create(c *gin.Context) error {
	env, err := readEnvelope(c, resourceSpec("tenant", "", tenantAttributeNames...))
	if err != nil {
		return err
	}
	if !auth.SlugPattern.MatchString(env.ID) {
		return apierror.Validation(ptrData+"/id", "must be a slug of 2 to 63 lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen (pattern %s)", auth.SlugPattern)
	}
	change, err := h.parseTenantChange(c.Request.Context(), env.ID, env.Attributes)
	if err != nil {
		return err
	}
	now := h.now().UTC()
	t := &store.Tenant{ID: env.ID, CreatedAt: now, UpdatedAt: now}
	if err := change.apply(t); err != nil {
		return err
	}
	err = h.tenants.CreateTenant(c.Request.Context(), t)
	if errors.Is(err, store.ErrConflict) {
		return apierror.New(http.StatusConflict, apierror.CodeConflict, "tenant %q already exists", env.ID)
	}
	if err != nil {
		return err
	}
	c.Header("Location", "/v1/tenants/"+t.ID)
	c.JSON(http.StatusCreated, gin.H{"data": h.tenantView(t)})
	return nil
}

// get handles GET /v1/tenants/:slug: a super-admin reads any tenant,
// anyone else only the tenant of their token. Another tenant answers 404,
// like an unknown one, so callers cannot probe which slugs exist.
func (h tenantsHandler) get(c *gin.Context) error {
	slug := c.Param("slug")
	caller := auth.CallerFrom(c)
	notFound := apierror.NotFound("no tenant %q", slug)
	if !caller.IsSuperAdmin() && caller.Tenant != slug {
		return notFound
	}
	t, err := h.tenants.GetTenant(c.Request.Context(), slug)
	return h.render(c, t, err, notFound)
}

// update handles PATCH /v1/tenants/:slug (super-admin): only the
// members given change.
func (h tenantsHandler) update(c *gin.Context) error {
	slug := c.Param("slug")
	notFound := apierror.NotFound("no tenant %q", slug)
	if !auth.SlugPattern.MatchString(slug) {
		return notFound
	}
	env, err := readEnvelope(c, resourceSpec("tenant", slug, tenantAttributeNames...))
	if err != nil {
		return err
	}
	change, err := h.parseTenantChange(c.Request.Context(), slug, env.Attributes)
	if err != nil {
		return err
	}
	t, err := h.tenants.UpdateTenant(c.Request.Context(), slug, change.apply)
	return h.render(c, t, err, notFound)
}

// render answers with the tenant a read or update returned, or notFound
// when there is none.
func (h tenantsHandler) render(c *gin.Context, t *store.Tenant, err, notFound error) error {
	if errors.Is(err, store.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"data": h.tenantView(t)})
	return nil
}

var tenantAttributeNames = []string{"default_policy_id", "services", "providers", "retention", "fairness_weight", "budgets", "notification_url", "max_in_flight"}

// tenantChange is the validated attributes of a tenant write, applied as a
// JSON merge patch: members not given keep their value, null clears.
type tenantChange struct {
	policyGiven bool
	policyID    *string // nil clears
	services    accessChange
	providers   accessChange
	// results and jobs change the retention settings.
	results, jobs retentionChange
	// fairness changes the fairness weight (nil value: the default).
	fairnessGiven bool
	fairness      *float64
	// budgets replaces the budgets; notificationURL changes the URL.
	budgetsGiven, notificationGiven bool
	budgets                         []store.Budget
	notificationURL                 string
	// maxInFlight changes the in-flight bound (nil value: none).
	maxInFlightGiven bool
	maxInFlight      *int
}

// maxInFlight bounds a tenant's or an API key's max_in_flight.
const maxInFlight = 1_000_000

// Bounds of a tenant's fairness weight.
const (
	minFairnessWeight = 0.01
	maxFairnessWeight = 1000.0
)

// retentionChange is a change to one retention setting.
type retentionChange struct {
	given bool
	value *time.Duration // nil: the deployment default
}

// accessChange is a change to a tenant's services or providers map.
type accessChange struct {
	clear   bool                     // the map was given as null: drop every entry
	entries map[string]*store.Access // a nil value drops the entry
}

// apply changes t; an error when its retention ends up with jobs kept
// less long than their results.
func (ch *tenantChange) apply(t *store.Tenant) error {
	if ch.policyGiven {
		t.DefaultPolicyID = ch.policyID
	}
	t.Services = ch.services.apply(t.Services)
	t.Providers = ch.providers.apply(t.Providers)
	if ch.results.given {
		t.Retention.Results = ch.results.value
	}
	if ch.jobs.given {
		t.Retention.Jobs = ch.jobs.value
	}
	if ch.fairnessGiven {
		t.FairnessWeight = ch.fairness
	}
	if ch.budgetsGiven {
		t.Budgets = ch.budgets
	}
	if ch.notificationGiven {
		t.NotificationURL = ch.notificationURL
	}
	if ch.maxInFlightGiven {
		t.MaxInFlight = ch.maxInFlight
	}
	r := t.Retention
	if r.Results == nil || r.Jobs == nil || *r.Jobs >= *r.Results {
		return nil
	}
	if ch.jobs.given {
		return apierror.Validation(ptrRetention+"/jobs_seconds", "must be at least results_seconds (%d)", *seconds(r.Results))
	}
	return apierror.Validation(ptrRetention+"/results_seconds", "must be at most jobs_seconds (%d)", *seconds(r.Jobs))
}

func (ch accessChange) apply(m map[string]store.Access) map[string]store.Access {
	if m == nil || ch.clear {
		m = map[string]store.Access{}
	}
	for key, access := range ch.entries {
		if access == nil {
			delete(m, key)
			continue
		}
		m[key] = *access
	}
	return m
}

// checkDefaultPolicy checks that a tenant's new default policy exists and
// is the tenant's own or gateway-wide.
func (h tenantsHandler) checkDefaultPolicy(ctx context.Context, tenant string, ch *tenantChange) error {
	if !ch.policyGiven || ch.policyID == nil {
		return nil
	}
	p, err := h.policies.GetPolicy(ctx, *ch.policyID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !p.Global() && p.Tenant != tenant) {
		return apierror.Unprocessable(apierror.CodeUnknownPolicy, "%s/default_policy_id: no policy %s for tenant %s", ptrAttributes, *ch.policyID, tenant)
	}
	return err
}

// parseTenantChange validates the attributes of a write of tenant, then
// its default policy.
func (h tenantsHandler) parseTenantChange(ctx context.Context, tenant string, attrs map[string]json.RawMessage) (*tenantChange, error) {
	ch := &tenantChange{}
	if raw, ok := attrs["default_policy_id"]; ok {
		ch.policyGiven = true
		if !strictjson.Absent(raw) {
			var id string
			if err := json.Unmarshal(raw, &id); err != nil {
				return nil, apierror.Validation(ptrAttributes+"/default_policy_id", "must be a UUID or null")
			}
			if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
				return nil, apierror.Validation(ptrAttributes+"/default_policy_id", "must be a UUID or null")
			}
			id = strings.ToLower(id)
			ch.policyID = &id
		}
	}
	var err error
	ch.services, err = parseAccess(attrs, "services", func(pointer, key string) error {
		if _, ok := jobs.LookupService(key); !ok {
			return apierror.Validation(pointer, "is not a service; use %s", serviceIDs())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ch.providers, err = parseAccess(attrs, "providers", func(pointer, key string) error {
		if _, ok := h.catalog.Lookup(key); !ok {
			return apierror.Unprocessable(apierror.CodeUnknownProvider, "%s: no provider %q (see GET /v1/providers)", pointer, key)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ch.results, ch.jobs, err = parseRetention(attrs); err != nil {
		return nil, err
	}
	if raw, ok := attrs["fairness_weight"]; ok {
		ch.fairnessGiven = true
		if !strictjson.Absent(raw) {
			var w float64
			if err := json.Unmarshal(raw, &w); err != nil || w < minFairnessWeight || w > maxFairnessWeight {
				return nil, apierror.Validation(ptrAttributes+"/fairness_weight",
					"must be a number from %g to %g, or null for the default (%g)", minFairnessWeight, maxFairnessWeight, store.DefaultFairnessWeight)
			}
			ch.fairness = &w
		}
	}
	if raw, ok := attrs["max_in_flight"]; ok {
		ch.maxInFlightGiven = true
		if !strictjson.Absent(raw) {
			var n int
			if err := json.Unmarshal(raw, &n); err != nil || n < 1 || n > maxInFlight {
				return nil, apierror.Validation(ptrAttributes+"/max_in_flight", "must be a whole number from 1 to %d, or null for no bound", maxInFlight)
			}
			ch.maxInFlight = &n
		}
	}
	if raw, ok := attrs["budgets"]; ok {
		ch.budgetsGiven = true
		if ch.budgets, err = parseBudgets(raw); err != nil {
			return nil, err
		}
	}
	if raw, ok := attrs["notification_url"]; ok {
		ch.notificationGiven = true
		if ch.notificationURL, err = parseNotificationURL(raw); err != nil {
			return nil, err
		}
	}
	if err := h.checkDefaultPolicy(ctx, tenant, ch); err != nil {
		return nil, err
	}
	return ch, nil
}

const ptrRetention = ptrAttributes + "/retention"

// parseRetention validates attributes.retention: an object of
// results_seconds and jobs_seconds, each whole seconds in bounds or null
// (the default); null for the whole object resets both.
func parseRetention(attrs map[string]json.RawMessage) (results, jobs retentionChange, err error) {
	raw, ok := attrs["retention"]
	if !ok {
		return results, jobs, nil
	}
	if strictjson.Absent(raw) {
		return retentionChange{given: true}, retentionChange{given: true}, nil
	}
	members, err := object(raw, ptrRetention)
	if err != nil {
		return results, jobs, err
	}
	if err := onlyKeys(members, ptrRetention, "results_seconds", "jobs_seconds"); err != nil {
		return results, jobs, err
	}
	setting := func(name string) (retentionChange, error) {
		raw, ok := members[name]
		if !ok {
			return retentionChange{}, nil
		}
		if strictjson.Absent(raw) {
			return retentionChange{given: true}, nil
		}
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil || n < minRetentionSeconds || n > maxRetentionSeconds {
			return retentionChange{}, apierror.Validation(ptrRetention+"/"+name,
				"must be a whole number of seconds from %d to %d (10 years), or null for the deployment default", minRetentionSeconds, maxRetentionSeconds)
		}
		d := time.Duration(n) * time.Second
		return retentionChange{given: true, value: &d}, nil
	}
	if results, err = setting("results_seconds"); err != nil {
		return results, jobs, err
	}
	jobs, err = setting("jobs_seconds")
	return results, jobs, err
}

// parseAccess validates attributes.services or attributes.providers: an
// object whose keys pass known and whose values are {enabled: boolean} or
// null.
func parseAccess(attrs map[string]json.RawMessage, member string, known func(pointer, key string) error) (accessChange, error) {
	pointer := ptrAttributes + "/" + member
	raw, ok := attrs[member]
	if !ok {
		return accessChange{}, nil
	}
	if strictjson.Absent(raw) {
		return accessChange{clear: true}, nil
	}
	members, err := object(raw, pointer)
	if err != nil {
		return accessChange{}, err
	}
	ch := accessChange{entries: map[string]*store.Access{}}
	keys := make([]string, 0, len(members))
	for key := range members {
		keys = append(keys, key)
	}
	slices.Sort(keys) // report the first problem deterministically
	for _, key := range keys {
		entryPointer := pointer + "/" + strictjson.EscapeName(key)
		if err := known(entryPointer, key); err != nil {
			return accessChange{}, err
		}
		if strictjson.Absent(members[key]) {
			ch.entries[key] = nil
			continue
		}
		var entry struct {
			Enabled *bool `json:"enabled"`
		}
		if err := decodeStrict(members[key], entryPointer, &entry); err != nil {
			return accessChange{}, err
		}
		if entry.Enabled == nil {
			return accessChange{}, apierror.Validation(entryPointer+"/enabled", "is required and must be a boolean")
		}
		ch.entries[key] = &store.Access{Enabled: *entry.Enabled}
	}
	return ch, nil
}

// serviceIDs lists the service ids for messages.
func serviceIDs() string {
	ids := []string{}
	for _, svc := range jobs.Services() {
		ids = append(ids, string(svc.ID))
	}
	return strings.Join(ids, ", ")
}
