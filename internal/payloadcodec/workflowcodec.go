package payloadcodec

import (
	"context"
	"time"

	"github.com/ai-job-gateway/gateway/internal/ttlcache"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// SystemScope is the scope of payloads that belong to no tenant: encoded
// outside a workflow, for a workflow that is no job, or when the job's
// tenant could not be looked up. It cannot be a tenant slug.
const SystemScope = "_system"

// ScopeOf names the scope (the tenant) of a workflow's payloads; "" when
// the workflow has none.
type ScopeOf func(ctx context.Context, workflowID string) (string, error)

// WorkflowCodec encrypts each workflow's payloads in the scope scopeOf
// names for the workflow the SDK says they belong to (its serialization
// context), and decrypts any payload in the scope it names. Lookups are
// cached: a workflow's scope never changes.
func (e *Encryptor) WorkflowCodec(scopeOf ScopeOf) converter.PayloadCodec {
	return workflowCodec{e: e, scopes: &scopeLookup{of: scopeOf, cache: ttlcache.New[string, string](-1, scopeCacheSize, time.Now)}}
}

type workflowCodec struct {
	e          *Encryptor
	scopes     *scopeLookup
	workflowID string
}

// WithSerializationContext binds the codec to the workflow the payloads
// belong to.
func (c workflowCodec) WithSerializationContext(sc converter.SerializationContext) converter.PayloadCodec {
	switch s := sc.(type) {
	case converter.WorkflowSerializationContext:
		c.workflowID = s.WorkflowID
	case converter.ActivitySerializationContext:
		c.workflowID = s.WorkflowID
	}
	return c
}

func (c workflowCodec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	return c.e.Codec(c.scopes.scope(c.workflowID, c.e.timeout)).Encode(payloads)
}

func (c workflowCodec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	return c.e.Decoder().Decode(payloads)
}

// scopeCacheSize bounds the workflows whose scope a codec remembers.
const scopeCacheSize = 16384

// scopeLookup finds and caches workflows' scopes.
type scopeLookup struct {
	of    ScopeOf
	cache *ttlcache.Cache[string, string] // by workflow id, kept until evicted
}

// scope is the workflow's scope, SystemScope when it has none or the
// lookup fails (the payloads are encrypted all the same, in a scope no
// tenant's deletion shreds; a failed lookup is not kept, so the next
// payload asks again).
func (l *scopeLookup) scope(workflowID string, timeout time.Duration) string {
	if workflowID == "" {
		return SystemScope
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s, err := l.cache.Get(ctx, workflowID, func(ctx context.Context) (string, error) {
		s, err := l.of(ctx, workflowID)
		if s == "" && err == nil {
			s = SystemScope
		}
		return s, err
	})
	if err != nil {
		return SystemScope
	}
	return s
}
