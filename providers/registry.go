package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// Registry holds the catalog and one adapter per provider.
type Registry struct {
	catalog  *Catalog
	adapters map[string]Adapter
	// calls are the adapters as callers get them: they refuse the
	// services the adapter did not declare (see guard).
	calls map[string]Adapter

	pricesOnce sync.Once
	prices     *PriceBook
}

// NewRegistry builds the adapter of every provider in c with the factory
// named by its adapter field; every failure is reported, and so is a
// service the provider lists that its adapter does not declare
// (Adapter.Services).
func NewRegistry(c *Catalog, factories map[string]Factory) (*Registry, error) {
	if c == nil {
		return nil, errors.New("providers: NewRegistry needs a catalog")
	}
	known := make([]string, 0, len(factories))
	for name := range factories {
		known = append(known, name)
	}
	sort.Strings(known)

	r := &Registry{catalog: c, adapters: make(map[string]Adapter, len(c.Providers)), calls: make(map[string]Adapter, len(c.Providers))}
	var errs []error
	for _, p := range c.Providers {
		f, ok := factories[p.Adapter]
		if !ok {
			errs = append(errs, fmt.Errorf("providers file: provider %q uses unknown adapter %q (known adapters: %s)",
				p.ID, p.Adapter, strings.Join(known, ", ")))
			continue
		}
		a, err := f(p)
		if err != nil && p.Status == StatusDisabled {
			// A disabled provider need not be usable (a local engine not
			// installed, a key not set): routing never picks it, and an
			// administrator who enables it gets this error from its calls.
			a = unusable{Permanent(jobs.CodeProviderRejected, fmt.Sprintf("provider %q cannot be used: %v", p.ID, err), nil), slices.Collect(maps.Keys(p.Services))}
			err = nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("providers file: provider %q (adapter %s): %w", p.ID, p.Adapter, err))
			continue
		}
		errs = append(errs, undeclared(p, a.Services())...)
		r.adapters[p.ID], r.calls[p.ID] = a, guard(a, p, a.Services())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// Catalog returns the catalog the registry was built from.
func (r *Registry) Catalog() *Catalog { return r.catalog }

// Prices is the price book of the catalog, made on first use.
func (r *Registry) Prices() *PriceBook {
	r.pricesOnce.Do(func() { r.prices = NewPriceBook(r.catalog) })
	return r.prices
}

// ExpectedDuration is how long a call to the provider takes, when its
// adapter knows (see DurationEstimator).
func (r *Registry) ExpectedDuration(providerID string) (d time.Duration, ok bool) {
	if e, isEstimator := r.adapters[providerID].(DurationEstimator); isEstimator {
		return e.ExpectedDuration(), true
	}
	return 0, false
}

// Submitter returns the adapter of a provider that works asynchronously
// (see Submitter). It refuses calls for services it did not declare.
func (r *Registry) Submitter(providerID string) (Submitter, bool) {
	s, ok := r.calls[providerID].(Submitter)
	return s, ok
}

// Adapter returns the adapter of a provider. It refuses calls for
// services it did not declare.
func (r *Registry) Adapter(providerID string) (Adapter, bool) {
	a, ok := r.calls[providerID]
	return a, ok
}

// undeclared reports each service p lists that its adapter does not
// serve.
func undeclared(p *Provider, served []jobs.ServiceID) []error {
	var errs []error
	for _, svc := range jobs.Services() {
		if p.Services[svc.ID] != nil && !slices.Contains(served, svc.ID) {
			errs = append(errs, fmt.Errorf("providers file: provider %q lists service %s, which adapter %s does not serve (it serves %s)",
				p.ID, svc.ID, p.Adapter, joinServices(served)))
		}
	}
	return errs
}

func joinServices(ids []jobs.ServiceID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}

// guard wraps a; an asynchronous adapter stays one.
func guard(a Adapter, p *Provider, served []jobs.ServiceID) Adapter {
	g := guarded{Adapter: a, provider: p, served: served}
	if s, ok := a.(Submitter); ok {
		return guardedSubmitter{guarded: g, submitter: s}
	}
	return g
}

// guarded passes on the calls for the services its adapter declared and
// refuses the others.
type guarded struct {
	Adapter
	provider *Provider
	served   []jobs.ServiceID
}

func (g guarded) refuse(svc jobs.ServiceID) *Error {
	if slices.Contains(g.served, svc) {
		return nil
	}
	return Permanent(jobs.CodeUnsupportedService,
		fmt.Sprintf("provider %q (adapter %s) does not serve %s; route these jobs to another provider", g.provider.ID, g.provider.Adapter, svc), nil)
}

func (g guarded) Run(ctx context.Context, call Call) (json.RawMessage, error) {
	if err := g.refuse(call.Service); err != nil {
		return nil, err
	}
	return g.Adapter.Run(ctx, call)
}

type guardedSubmitter struct {
	guarded
	submitter Submitter
}

func (g guardedSubmitter) Submit(ctx context.Context, call Call) (string, error) {
	if err := g.refuse(call.Service); err != nil {
		return "", err
	}
	return g.submitter.Submit(ctx, call)
}

func (g guardedSubmitter) Check(ctx context.Context, call Call, handle string) (Check, error) {
	if err := g.refuse(call.Service); err != nil {
		return Check{}, err
	}
	return g.submitter.Check(ctx, call, handle)
}

// unusable is the adapter of a disabled provider whose own adapter could
// not be built.
type unusable struct {
	err      *Error
	services []jobs.ServiceID
}

func (u unusable) Services() []jobs.ServiceID { return u.services }

func (u unusable) Run(context.Context, Call) (json.RawMessage, error) { return nil, u.err }
