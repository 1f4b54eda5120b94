package media

import (
	"context"
	"sync"
)

// Slots caps how many fetches each tenant runs at once in this process, so
// one tenant's many media jobs cannot take all of a worker's fetch
// bandwidth (docs/media.md, Slow media hosts). A nil *Slots caps nothing.
type Slots struct {
	per     int
	mu      sync.Mutex
	tenants map[string]*tenantSlots
}

// tenantSlots are one tenant's slots; users counts holders and waiters, so
// the entry goes when the last one leaves.
type tenantSlots struct {
	held  chan struct{}
	users int
}

// NewSlots allows per fetches of each tenant at once; nil (no cap) when
// per <= 0.
func NewSlots(per int) *Slots {
	if per <= 0 {
		return nil
	}
	return &Slots{per: per, tenants: map[string]*tenantSlots{}}
}

// Acquire waits for one of tenant's slots, or for ctx to end (then it
// returns ctx.Err()). release gives the slot back; call it once.
func (s *Slots) Acquire(ctx context.Context, tenant string) (release func(), err error) {
	if s == nil || tenant == "" {
		// No cap, or a fetch scheduled before fetches named their tenant:
		// those are few and must not share one tenant's slots.
		return func() {}, nil
	}
	s.mu.Lock()
	t := s.tenants[tenant]
	if t == nil {
		t = &tenantSlots{held: make(chan struct{}, s.per)}
		s.tenants[tenant] = t
	}
	t.users++
	s.mu.Unlock()
	select {
	case t.held <- struct{}{}:
		return func() {
			<-t.held
			s.leave(tenant, t)
		}, nil
	case <-ctx.Done():
		s.leave(tenant, t)
		return nil, ctx.Err()
	}
}

func (s *Slots) leave(tenant string, t *tenantSlots) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.users--; t.users == 0 {
		delete(s.tenants, tenant)
	}
}
