package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// Registry holds the catalog and one adapter per provider.
type Registry struct {
	catalog  *Catalog
	adapters map[string]Adapter
}

// NewRegistry builds the adapter of every provider in c with the factory
// named by its adapter field; every failure is reported.
func NewRegistry(c *Catalog, factories map[string]Factory) (*Registry, error) {
	if c == nil {
		return nil, errors.New("providers: NewRegistry needs a catalog")
	}
	known := make([]string, 0, len(factories))
	for name := range factories {
		known = append(known, name)
	}
	sort.Strings(known)

	r := &Registry{catalog: c, adapters: make(map[string]Adapter, len(c.Providers))}
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
			a = unusable{Permanent(jobs.CodeProviderRejected, fmt.Sprintf("provider %q cannot be used: %v", p.ID, err), nil)}
			err = nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("providers file: provider %q (adapter %s): %w", p.ID, p.Adapter, err))
			continue
		}
		r.adapters[p.ID] = a
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// Catalog returns the catalog the registry was built from.
func (r *Registry) Catalog() *Catalog { return r.catalog }

// ExpectedDuration is how long a call to the provider takes, when its
// adapter knows (see DurationEstimator).
func (r *Registry) ExpectedDuration(providerID string) (d time.Duration, ok bool) {
	if e, isEstimator := r.adapters[providerID].(DurationEstimator); isEstimator {
		return e.ExpectedDuration(), true
	}
	return 0, false
}

// Submitter returns the adapter of a provider that works asynchronously
// (see Submitter).
func (r *Registry) Submitter(providerID string) (Submitter, bool) {
	s, ok := r.adapters[providerID].(Submitter)
	return s, ok
}

// Adapter returns the adapter of a provider.
func (r *Registry) Adapter(providerID string) (Adapter, bool) {
	a, ok := r.adapters[providerID]
	return a, ok
}

// unusable is the adapter of a disabled provider whose own adapter could
// not be built.
type unusable struct{ err *Error }

func (u unusable) Run(context.Context, Call) (json.RawMessage, error) { return nil, u.err }
