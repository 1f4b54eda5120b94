package jobops

import (
	"testing"

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
	require.True(t, q.holdsNone("d"))
	require.True(t, q.push(store.JobStart{JobID: "d1", Tenant: "d"}), "a tenant that holds none gets in")
	require.False(t, q.holdsNone("d"))
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
