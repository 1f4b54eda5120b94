package jobops

import (
	"sync"

	"github.com/ai-job-gateway/gateway/store"
)

// fairQueue holds a dispatcher's starts in memory and hands them out in
// tenants' turns, each tenant's in the order they came, so that one
// tenant's backlog does not hold back another's starts (docs/operations.md,
// Fairness between tenants).
type fairQueue struct {
	// ready holds one token per start held: a starter takes a token, then
	// the start whose turn it is.
	ready    chan struct{}
	capacity int

	mu       sync.Mutex
	byTenant map[string][]store.JobStart
	turns    []string // tenants with starts held, the next turn first
	held     int
}

// newFairQueue holds up to capacity starts, and up to as many more of
// tenants that hold none (a newcomer does not wait for the room a
// backlog took).
func newFairQueue(capacity int) *fairQueue {
	return &fairQueue{ready: make(chan struct{}, 2*capacity), capacity: capacity, byTenant: map[string][]store.JobStart{}}
}

func (q *fairQueue) admitsLocked(tenant string) bool {
	return q.held < q.capacity || (len(q.byTenant[tenant]) == 0 && q.held < 2*q.capacity)
}

// push holds start unless the queue has no room for it (false).
func (q *fairQueue) push(start store.JobStart) bool {
	q.mu.Lock()
	if !q.admitsLocked(start.Tenant) {
		q.mu.Unlock()
		return false
	}
	if len(q.byTenant[start.Tenant]) == 0 {
		q.turns = append(q.turns, start.Tenant)
	}
	q.byTenant[start.Tenant] = append(q.byTenant[start.Tenant], start)
	q.held++
	q.mu.Unlock()
	q.ready <- struct{}{} // never blocks: tokens never outnumber starts held
	return true
}

// pop takes the start whose turn it is; call it once per token taken
// from ready.
func (q *fairQueue) pop() store.JobStart {
	q.mu.Lock()
	defer q.mu.Unlock()
	tenant := q.turns[0]
	starts := q.byTenant[tenant]
	start := starts[0]
	q.turns = q.turns[1:]
	if len(starts) == 1 {
		delete(q.byTenant, tenant)
	} else {
		q.byTenant[tenant] = starts[1:]
		q.turns = append(q.turns, tenant) // its next start waits a turn
	}
	q.held--
	return start
}

// holdsNone reports whether the queue holds none of tenant's starts and
// has room for one.
func (q *fairQueue) holdsNone(tenant string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.byTenant[tenant]) == 0 && q.admitsLocked(tenant)
}

// len is how many starts are held.
func (q *fairQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.held
}
