package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/internal/breaker"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// BreakerStore keeps the providers' circuit breakers (docs/api.md,
// Circuit breakers; store.Cache).
type BreakerStore interface {
	Breakers(ctx context.Context) (map[store.BreakerKey]breaker.Breaker, error)
	ForceBreaker(ctx context.Context, key store.BreakerKey, state breaker.State, by string, now time.Time) (breaker.Breaker, error)
}

// breakerHealth is a service's health on a provider: its circuit breaker.
type breakerHealth struct {
	State               breaker.State `json:"state"`
	Since               *time.Time    `json:"since"`
	FailureRate         float64       `json:"failure_rate"`
	CallsInWindow       int           `json:"calls_in_window"`
	ConsecutiveFailures int           `json:"consecutive_failures"`
	Opens               int           `json:"opens"`
	NextProbeAt         *time.Time    `json:"next_probe_at"`
	// Forced is the state an operator forced ("auto" when none), by whom
	// and when; absent until an operator set one.
	Forced   string     `json:"forced,omitempty"`
	ForcedBy string     `json:"forced_by,omitempty"`
	ForcedAt *time.Time `json:"forced_at,omitempty"`
	Enabled  bool       `json:"enabled"`
}

func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// healthView shows a breaker at now under its configuration.
func healthView(cfg breaker.Config, b breaker.Breaker, now time.Time) *breakerHealth {
	calls, _ := b.Counts(cfg, now)
	h := &breakerHealth{
		State:               b.Effective(now),
		Since:               optionalTime(b.Since),
		FailureRate:         b.FailureRate(cfg, now),
		CallsInWindow:       calls,
		ConsecutiveFailures: b.ConsecutiveFailures,
		Opens:               b.Opens,
		NextProbeAt:         optionalTime(b.NextProbe(now)),
		Enabled:             !cfg.Disabled,
	}
	if cfg.Disabled && b.Forced == "" {
		h.State, h.NextProbeAt = breaker.Closed, nil
	}
	if b.ForcedBy != "" {
		h.Forced, h.ForcedBy, h.ForcedAt = string(b.Forced), b.ForcedBy, optionalTime(b.ForcedAt)
		if b.Forced == "" {
			h.Forced = breakerAuto
		}
	}
	return h
}

// addHealth sets the health of each of a provider's services.
func addHealth(view *providerResource, catalog *providers.Catalog, p *providers.Provider, all map[store.BreakerKey]breaker.Breaker, now time.Time) {
	cfg := catalog.BreakerConfig(p)
	for id, c := range view.Attributes.Services {
		c.Health = healthView(cfg, all[store.BreakerKey{ProviderID: p.ID, Service: jobs.ServiceID(id)}], now)
		view.Attributes.Services[id] = c
	}
}

// breakerAuto is the forced state that returns a breaker to automatic.
const breakerAuto = "auto"

// breakersHandler serves operators' forced breaker states (docs/api.md,
// Circuit breakers).
type breakersHandler struct {
	catalog  *providers.Catalog
	breakers BreakerStore
	now      func() time.Time
}

// routes registers the update on the authenticated /v1 group; as provider
// statuses, it needs providers:write and super-admin.
func (h breakersHandler) routes(v1 *gin.RouterGroup) {
	v1.PUT("/providers/:id/services/:service/breaker", auth.RequireScope("providers:write"), auth.RequireSuperAdmin(), handle(h.force))
}

type breakerResource struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	Attributes *breakerHealth `json:"attributes"`
}

// force handles PUT /v1/providers/:id/services/:service/breaker: state
// open or closed forces the breaker, auto returns it to the error rate.
func (h breakersHandler) force(c *gin.Context) error {
	p, ok := h.catalog.Lookup(c.Param("id"))
	if !ok {
		return apierror.NotFound("no provider %q", c.Param("id"))
	}
	service := c.Param("service")
	if _, ok := p.Services[jobs.ServiceID(service)]; !ok {
		return apierror.NotFound("provider %s does not offer a service %q", p.ID, service)
	}
	env, err := readEnvelope(c, envelopeSpec{Type: "circuit_breaker", Members: []string{"type", "attributes"},
		Attributes: []string{"state"}, AttributesRequired: true})
	if err != nil {
		return err
	}
	st, given, err := stringMember(env.Attributes, "state", ptrAttributes)
	if err != nil {
		return err
	}
	var state breaker.State
	switch {
	case !given:
		return apierror.Validation(ptrAttributes+"/state", "is required and must be one of open, closed, auto")
	case st == string(breaker.Open) || st == string(breaker.Closed):
		state = breaker.State(st)
	case st == breakerAuto:
	default:
		return apierror.Validation(ptrAttributes+"/state", "must be one of open, closed, auto")
	}
	now := time.Now()
	if h.now != nil {
		now = h.now()
	}
	key := store.BreakerKey{ProviderID: p.ID, Service: jobs.ServiceID(service)}
	b, err := h.breakers.ForceBreaker(c.Request.Context(), key, state, auth.CallerFrom(c).Subject, now.UTC())
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"data": breakerResource{ID: fmt.Sprintf("%s/%s", p.ID, service), Type: "circuit_breaker",
		Attributes: healthView(h.catalog.BreakerConfig(p), b, now)}})
	return nil
}
