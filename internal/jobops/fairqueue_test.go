package jobops

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
