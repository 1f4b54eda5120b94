package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/ai-job-gateway/gateway/api/apierror"
	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/store"
)

// scopeAuditRead reads the audit log (docs/api.md, Audit log).
const scopeAuditRead = "audit:read"

// AuditLog reads the audit log (store.AuditStore).
type AuditLog interface {
	AuditEvents(ctx context.Context, q store.AuditQuery) ([]store.AuditEvent, error)
}

// auditHandler serves GET /v1/audit-events.
type auditHandler struct{ log AuditLog }

func (h auditHandler) routes(v1 *gin.RouterGroup) {
	v1.GET("/audit-events", auth.RequireScope(scopeAuditRead), handle(h.list))
}

// auditEventResource is an audit event as the API shows it.
type auditEventResource struct {
	ID         string              `json:"id"`
	Type       string              `json:"type"`
	Attributes auditEventAttribute `json:"attributes"`
}

type auditEventAttribute struct {
	At        time.Time                    `json:"at"`
	Tenant    *string                      `json:"tenant"`
	Actor     string                       `json:"actor"`
	Action    string                       `json:"action"`
	Target    string                       `json:"target"`
	Changes   map[string]store.AuditChange `json:"changes"`
	RequestID *string                      `json:"request_id"`
}

// list answers a page of the events the caller may read, newest first:
// its tenant's, or with the super-admin role every tenant's and the
// gateway's (filter[tenant] narrows them).
func (h auditHandler) list(c *gin.Context) error {
	caller := auth.CallerFrom(c)
	q := store.AuditQuery{Action: c.Query("filter[action]"), Actor: c.Query("filter[actor]"), Target: c.Query("filter[target]"), Limit: DefaultPageSize}
	requested, named := c.GetQuery("filter[tenant]")
	switch {
	case caller.IsSuperAdmin():
		if named {
			q.Tenant = &requested
		}
	case caller.Tenant == "":
		return apierror.Forbidden("the token carries no tenant_id claim; the audit log is read per tenant")
	case named && requested != caller.Tenant:
		return apierror.Forbidden("query filter[tenant]: only a super-admin reads another tenant's audit log")
	default:
		q.Tenant = &caller.Tenant
	}
	var err error
	for name, at := range map[string]*time.Time{"filter[from]": &q.From, "filter[to]": &q.To} {
		if v := c.Query(name); v != "" {
			if *at, err = time.Parse(time.RFC3339Nano, v); err != nil {
				return invalidQuery(name, "must be an RFC 3339 timestamp (a + in an offset sent as %%2B)")
			}
		}
	}
	if v, ok := c.GetQuery("page[size]"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			return invalidQuery("page[size]", "must be an integer from 1 to %d", MaxPageSize)
		}
		q.Limit = n
	}
	if v := c.Query("page[after]"); v != "" {
		if _, err := uuid.Parse(v); err != nil || len(v) != 36 {
			return invalidQuery("page[after]", "must be the id of the last event of the page before (links.next)")
		}
		q.Before = v
	}
	events, err := h.log.AuditEvents(c.Request.Context(), q)
	if err != nil {
		return err
	}
	data := make([]auditEventResource, len(events))
	for i, e := range events {
		attrs := auditEventAttribute{At: e.At.UTC(), Actor: e.Actor, Action: e.Action, Target: e.Target, Changes: e.Changes}
		if e.Tenant != "" {
			attrs.Tenant = &e.Tenant
		}
		if e.RequestID != "" {
			attrs.RequestID = &e.RequestID
		}
		if attrs.Changes == nil {
			attrs.Changes = map[string]store.AuditChange{}
		}
		data[i] = auditEventResource{ID: e.ID, Type: "audit-event", Attributes: attrs}
	}
	self := url.URL{Scheme: scheme(c), Host: c.Request.Host, Path: c.Request.URL.Path, RawQuery: c.Request.URL.RawQuery}
	links := gin.H{"self": self.String(), "next": nil}
	if len(events) == q.Limit {
		next := self
		query := c.Request.URL.Query()
		query.Set("page[after]", events[len(events)-1].ID)
		next.RawQuery = query.Encode()
		links["next"] = next.String()
	}
	c.JSON(http.StatusOK, gin.H{"data": data, "links": links})
	return nil
}

// recordActor makes the caller the actor of the store writes of its
// request: each administrative write records it in the audit log.
func recordActor(c *gin.Context) {
	if caller, ok := auth.LookupCaller(c); ok {
		ctx := c.Request.Context()
		c.Request = c.Request.WithContext(store.WithActor(ctx, store.Actor{Subject: caller.Subject, RequestID: RequestID(ctx)}))
	}
	c.Next()
}
