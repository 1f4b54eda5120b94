package jobops

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/ai-job-gateway/gateway/store"
)

func TestFairQueueTakesTenantsInTurns(t *testing.T) {
	t.Parallel()
	q := newFairQueue(8)
	for _, id := range []string{"a1", "a2", "a3", "a4", "a5", "b1", "b2"} {
		require.True(t, q.push(store.JobStart{JobID: id, Tenant: id[:1]}))
	}
	require.True(t, q.push(store.JobStart{JobID: "c1", Tenant: "c"}))
	require.False(t, q.push(store.JobStart{JobID: "c2", Tenant: "c"}), "full")
	require.True(t, q.admitsLight("d"))
	require.True(t, q.push(store.JobStart{JobID: "d1", Tenant: "d"}), "a tenant that holds few gets in")
	require.False(t, q.admitsLight("d"), "one is an eighth of 8")
	require.Equal(t, 9, q.len())

	var order []string
	for range 9 {
		<-q.ready
		order = append(order, q.pop().JobID)
	}
	require.Equal(t, []string{"a1", "b1", "c1", "d1", "a2", "b2", "a3", "a4", "a5"}, order)
	require.Zero(t, q.len())
	select {
	case <-q.ready:
		t.Fatal("a token without a start")
	default:
	}
}

func TestFairQueueServesTheTenantServedLeastLatelyFirst(t *testing.T) {
	t.Parallel()
	q := newFairQueue(16)
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	q.now = func() time.Time { return now }
	take := func(n int) (ids []string) {
		for range n {
			<-q.ready
			ids = append(ids, q.pop().JobID)
		}
		return ids
	}
	for i := range 8 {
		require.True(t, q.push(store.JobStart{JobID: fmt.Sprintf("a%d", i), Tenant: "a"}))
	}
	require.Equal(t, []string{"a0", "a1", "a2", "a3"}, take(4))
	for i := range 3 {
		require.True(t, q.push(store.JobStart{JobID: fmt.Sprintf("b%d", i), Tenant: "b"}))
	}
	require.Equal(t, []string{"b0", "b1", "b2", "a4"}, take(4), "a newcomer goes first while the busy tenant was served more")

	// A minute later a, which waited all that time, goes first; what it
	// was served is all but forgotten.
	now = now.Add(time.Minute)
	for i := range 2 {
		require.True(t, q.push(store.JobStart{JobID: fmt.Sprintf("c%d", i), Tenant: "c"}))
	}
	require.Equal(t, []string{"a5", "c0", "c1", "a6", "a7"}, take(5))
}

func TestFairQueueNeverStarvesABusyTenant(t *testing.T) {
	t.Parallel()
	q := newFairQueue(64)
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	q.now = func() time.Time { return now }
	for i := range 20 {
		require.True(t, q.push(store.JobStart{JobID: fmt.Sprintf("a%d", i), Tenant: "a"}))
	}
	<-q.ready
	require.Equal(t, "a0", q.pop().JobID)
	// Newcomers keep arriving, each served less than a.
	var order []string
	for i := range 8 {
		now = now.Add(time.Second)
		require.True(t, q.push(store.JobStart{JobID: fmt.Sprintf("n%d", i), Tenant: fmt.Sprintf("new-%d", i)}))
		<-q.ready
		order = append(order, q.pop().JobID)
	}
	require.Contains(t, order, "a1", "a waits at most starveAfter for its turn")
}

func TestATenantAloneIsNotLight(t *testing.T) {
	t.Parallel()
	q := newFairQueue(64)
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	q.now = func() time.Time { return now }
	require.True(t, q.push(store.JobStart{JobID: "a0", Tenant: "a"}))
	require.False(t, q.servedLittle("a"), "a tenant alone is paced from its first start")
	<-q.ready
	q.pop()
	require.True(t, q.servedLittle("b"), "served less than a")
	for i := range lightServed {
		require.True(t, q.push(store.JobStart{JobID: fmt.Sprintf("b%d", i), Tenant: "b"}))
		<-q.ready
		q.pop()
		require.True(t, q.push(store.JobStart{JobID: fmt.Sprintf("a%d", i+1), Tenant: "a"}))
		<-q.ready
		q.pop()
	}
	require.False(t, q.servedLittle("b"), "served lightServed starts lately")
	now = now.Add(servedHalfLife)
	q.decay()
	require.True(t, q.servedLittle("b"), "half of it forgotten")
}

// heldBack is a dispatcher whose pacer lets no start go for an hour, with
// tenant heavy served 40 starts lately.
func heldBack(t *testing.T) *Dispatcher {
	t.Helper()
	d := NewDispatcher(DispatcherConfig{AcceptTarget: time.Millisecond})
	d.pace.limiter.SetLimit(rate.Every(time.Hour))
	require.True(t, d.pace.limiter.Allow(), "its burst, spent")
	for i := range 40 {
		require.True(t, d.queue.push(store.JobStart{JobID: fmt.Sprintf("h%d", i), Tenant: "heavy"}))
		<-d.queue.ready
		d.queue.pop()
	}
	return d
}

func TestALightTenantsStartSkipsThePacer(t *testing.T) {
	t.Parallel()
	d := heldBack(t)
	require.True(t, d.queue.push(store.JobStart{JobID: "h40", Tenant: "heavy"}))
	<-d.queue.ready
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, d.waitTurn(ctx), context.DeadlineExceeded, "the heavy tenant's start waits for the pacer")

	require.True(t, d.queue.push(store.JobStart{JobID: "l0", Tenant: "light"}))
	require.NoError(t, d.waitTurn(t.Context()), "the light tenant's start goes at once")
	require.Equal(t, "l0", d.queue.pop().JobID)
}

func TestLightStartsBeyondTheirBurstWaitForTheirRateNotThePacer(t *testing.T) {
	t.Parallel()
	d := heldBack(t)
	d.lightStarts = rate.NewLimiter(rate.Every(20*time.Millisecond), 1)
	for i := range 3 {
		require.True(t, d.queue.push(store.JobStart{JobID: fmt.Sprintf("l%d", i), Tenant: "light"}))
	}
	began := time.Now()
	for i := range 3 {
		<-d.queue.ready
		require.NoError(t, d.waitTurn(t.Context()))
		require.Equal(t, fmt.Sprintf("l%d", i), d.queue.pop().JobID)
	}
	require.Less(t, time.Since(began), 5*time.Second, "two light starts' worth of the light rate, not an hour")
	require.GreaterOrEqual(t, time.Since(began), 30*time.Millisecond, "beyond the burst the light rate holds")
}
