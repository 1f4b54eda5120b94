package jobops

import (
	"math"
	"sync"
	"time"

	"github.com/ai-job-gateway/gateway/store"
)

// fairQueue holds a dispatcher's starts in memory and hands them out
// fairly between tenants, each tenant's in the order they came: the next
// start is the tenant's that was served least lately (its starts counted
// with a half-life of servedHalfLife), the longest waiting on ties; but a
// tenant none of whose starts was handed out for starveAfter goes first,
// so that a stream of newcomers never starves a busy tenant. A tenant
// that submits ten jobs while another's thousand wait goes first, and two
// busy tenants take turns (docs/operations.md, Fairness between tenants).
type fairQueue struct {
	// ready holds one token per start held: a starter takes a token, then
	// the start whose turn it is.
	ready chan struct{}
	// lightArrived wakes a starter held back by the pacer when a start of
	// a tenant served little lately comes in.
	lightArrived chan struct{}
	capacity     int

	mu       sync.Mutex
	byTenant map[string][]store.JobStart
	turns    []string // tenants with starts held, the longest waiting first
	held     int
	// served counts each tenant's starts handed out, decayed to
	// servedAt.
	served   map[string]float64
	servedAt time.Time
	// waiting is since when each tenant in turns waits for its next start
	// to be handed out.
	waiting map[string]time.Time
	now     func() time.Time
}

// servedHalfLife is how fast a tenant's starts handed out are forgotten;
// starveAfter how long a tenant waits at most for its turn.
const (
	servedHalfLife = 10 * time.Second
	starveAfter    = 5 * time.Second
)

// newFairQueue holds up to capacity starts, and up to as many more of
// tenants that hold few (a newcomer does not wait for the room a backlog
// took).
func newFairQueue(capacity int) *fairQueue {
	return &fairQueue{ready: make(chan struct{}, 2*capacity), lightArrived: make(chan struct{}, lightWakes), capacity: capacity,
		byTenant: map[string][]store.JobStart{}, served: map[string]float64{}, waiting: map[string]time.Time{}, now: time.Now}
}

func (q *fairQueue) admitsLocked(tenant string) bool {
	return q.held < q.capacity || (q.light(tenant) && q.held < 2*q.capacity)
}

// light reports whether tenant holds few starts (under an eighth of the
// capacity): a tenant with a few jobs gets in beyond a backlog's.
func (q *fairQueue) light(tenant string) bool {
	return len(q.byTenant[tenant]) < max(q.capacity/8, 1)
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
		q.waiting[start.Tenant] = q.now()
	}
	q.byTenant[start.Tenant] = append(q.byTenant[start.Tenant], start)
	q.held++
	light := q.servedLittle(start.Tenant)
	q.mu.Unlock()
	q.ready <- struct{}{} // never blocks: tokens never outnumber starts held
	if light {
		select {
		case q.lightArrived <- struct{}{}:
		default: // enough are pending
		}
	}
	return true
}

// lightWakes is how many starters held back by the pacer light starts may
// wake at once: each light start wakes one, so a few arriving together
// are made side by side.
const lightWakes = 16

// lightServed is what a tenant was served lately under which its starts
// are light: they may skip the dispatcher's pacer.
const lightServed = 32

// servedLittle reports whether tenant's starts are light: it was served
// under lightServed lately, and less than another tenant. A tenant alone
// (one flooding an idle gateway) is paced from its first start, and
// leaves the light starts to those that come after it.
func (q *fairQueue) servedLittle(tenant string) bool {
	n := q.served[tenant]
	if n >= lightServed {
		return false
	}
	for other, m := range q.served {
		if other != tenant && m > n {
			return true
		}
	}
	return false
}

// pop takes the start whose turn it is; call it once per token taken
// from ready.
func (q *fairQueue) pop() store.JobStart {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.decay()
	next := q.next()
	tenant := q.turns[next]
	starts := q.byTenant[tenant]
	start := starts[0]
	q.turns = append(q.turns[:next:next], q.turns[next+1:]...)
	if len(starts) == 1 {
		delete(q.byTenant, tenant)
		delete(q.waiting, tenant)
	} else {
		q.byTenant[tenant] = starts[1:]
		q.turns = append(q.turns, tenant) // its next start waits a turn
		q.waiting[tenant] = q.now()
	}
	q.served[tenant]++
	q.held--
	return start
}

// next is the index in turns of the tenant whose start pop takes.
func (q *fairQueue) next() int {
	next, starved := 0, -1
	starving := q.now().Add(-starveAfter)
	for i, tenant := range q.turns {
		if since := q.waiting[tenant]; since.Before(starving) && (starved < 0 || since.Before(q.waiting[q.turns[starved]])) {
			starved = i
		}
		if q.served[tenant] < q.served[q.turns[next]] {
			next = i
		}
	}
	if starved >= 0 {
		return starved
	}
	return next
}

// nextLight reports whether the start pop would take now is light; call
// it only holding a token from ready.
func (q *fairQueue) nextLight() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.decay()
	return q.servedLittle(q.turns[q.next()])
}

// decay forgets served counts by their half-life, and tenants whose count
// fell below one start.
func (q *fairQueue) decay() {
	now := q.now()
	if !q.servedAt.IsZero() {
		factor := math.Exp2(-float64(now.Sub(q.servedAt)) / float64(servedHalfLife))
		for tenant, n := range q.served {
			if n *= factor; n < 1 && len(q.byTenant[tenant]) == 0 {
				delete(q.served, tenant)
			} else {
				q.served[tenant] = n
			}
		}
	}
	q.servedAt = now
}

// admitsLight reports whether tenant holds few starts and the queue has
// room for one more of them.
func (q *fairQueue) admitsLight(tenant string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.light(tenant) && q.admitsLocked(tenant)
}

// len is how many starts are held.
func (q *fairQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.held
}
