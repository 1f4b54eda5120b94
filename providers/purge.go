package providers

import (
	"context"
	"errors"
	"fmt"

	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// Purger is an Adapter whose vendor keeps a copy of submitted work and
// offers an API to delete it (docs/providers.md, Deleting a job's vendor
// copy).
type Purger interface {
	Adapter
	// Purge deletes the vendor's copy of the work with this handle (the
	// handle Submit returned). A copy already gone is success. Failures
	// are classified as Run's.
	Purge(ctx context.Context, call Call, handle string) error
}

// PurgeOutcome is what became of a job's vendor copy when the job was
// deleted.
type PurgeOutcome string

// Purge outcomes.
const (
	// PurgePurged: the vendor's delete API was called and succeeded.
	PurgePurged PurgeOutcome = "purged"
	// PurgeNotRetained: the vendor keeps nothing once the call is over
	// (a local engine, a vendor that documents deleting the work on
	// download), so there is nothing to delete.
	PurgeNotRetained PurgeOutcome = "not_retained"
	// PurgeNoAPI: the vendor keeps the work for a while and offers no API
	// to delete it.
	PurgeNoAPI PurgeOutcome = "no_delete_api"
	// PurgeFailed: the vendor's delete API was called and failed, or could
	// not be called.
	PurgeFailed PurgeOutcome = "failed"
)

// RetentionDescriber is an Adapter that is not a Purger and says what its
// vendor keeps of a call once it is over: PurgeNotRetained or PurgeNoAPI.
// An adapter that is neither a Purger nor a RetentionDescriber counts as
// PurgeNoAPI: a vendor is assumed to keep what it was sent unless its
// adapter says otherwise.
type RetentionDescriber interface {
	VendorRetention() PurgeOutcome
}

// Purge deletes the vendor's copy of a job's work at a provider, the work
// with this handle (the one the provider's Submit returned; "" when the job
// kept none). A Purger's copy is deleted (PurgePurged); any other adapter's
// declared retention is returned as it is (PurgeNotRetained or PurgeNoAPI)
// and the vendor is not called. A failure is PurgeFailed with an *Error
// classified as Run's (retryable for 429, 5xx and network errors,
// permanent otherwise), or ctx.Err() when ctx ended. A provider not in the
// registry is PurgeFailed with a permanent error.
func (r *Registry) Purge(ctx context.Context, providerID string, service jobs.ServiceID, handle string) (PurgeOutcome, error) {
	a, ok := r.adapters[providerID]
	if !ok {
		return PurgeFailed, Permanent(jobs.CodeProviderRejected,
			fmt.Sprintf("provider %q is not in the catalog, so its copy of the job cannot be deleted", providerID), nil)
	}
	if u, isUnusable := a.(unusable); isUnusable {
		return PurgeFailed, u.err
	}
	p, isPurger := a.(Purger)
	if !isPurger {
		if d, ok := a.(RetentionDescriber); ok && d.VendorRetention() == PurgeNotRetained {
			return PurgeNotRetained, nil
		}
		return PurgeNoAPI, nil
	}
	provider, _ := r.catalog.Lookup(providerID)
	if err := (guarded{provider: provider, served: a.Services()}).refuse(service); err != nil {
		return PurgeFailed, err
	}
	if handle == "" {
		return PurgeFailed, Permanent(jobs.CodeProviderRejected,
			fmt.Sprintf("provider %q keeps a copy of submitted work under the handle its submit returned, and none was given", providerID), nil)
	}
	err := p.Purge(ctx, Call{Service: service, Provider: provider}, handle)
	if err == nil {
		return PurgePurged, nil
	}
	if ctx.Err() != nil {
		return PurgeFailed, ctx.Err()
	}
	var perr *Error
	if errors.As(err, &perr) {
		return PurgeFailed, err
	}
	return PurgeFailed, Permanent(jobs.CodeProviderRejected, fmt.Sprintf("provider %q could not delete its copy of the job", providerID), err)
}
