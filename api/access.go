package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/providers"
	"github.com/ai-job-gateway/gateway/store"
)

// checkTenantAccess answers 403 when the tenant's record disables the
// service (SERVICE_NOT_ENABLED) or the provider the job names
// (PROVIDER_NOT_ENABLED). A tenant without a record, and keys its record
// does not list, get the platform default: enabled.
func (s *Server) checkTenantAccess(ctx context.Context, svc providers.Service, tenant string, req *jobRequest) error {
	t, err := s.tenants().GetTenant(ctx, tenant)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !t.ServiceEnabled(string(svc.ID)) {
		return apierror.New(http.StatusForbidden, apierror.CodeServiceNotEnabled, "the %s service is not enabled for tenant %s", svc.ID, tenant)
	}
	if req.Provider != "" && !t.ProviderEnabled(req.Provider) {
		return apierror.New(http.StatusForbidden, apierror.CodeProviderNotEnabled, "%s/provider: provider %s is not enabled for tenant %s", ptrAttributes, req.Provider, tenant)
	}
	return nil
}
