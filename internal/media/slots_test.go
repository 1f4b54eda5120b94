package media_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/media"
)

func TestSlotsPerTenant(t *testing.T) {
	t.Parallel()
	slots := media.NewSlots(2)
	first, err := slots.Acquire(t.Context(), "acme")
	require.NoError(t, err)
	second, err := slots.Acquire(t.Context(), "acme")
	require.NoError(t, err)
	other, err := slots.Acquire(t.Context(), "globex")
	require.NoError(t, err, "another tenant is not held")
	other()

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = slots.Acquire(ctx, "acme")
	require.ErrorIs(t, err, context.DeadlineExceeded, "a third waits, until its context ends")

	got := make(chan struct{})
	go func() {
		third, err := slots.Acquire(t.Context(), "acme")
		if err == nil {
			third()
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("a third slot while two are held")
	case <-time.After(50 * time.Millisecond):
	}
	first()
	<-got
	second()

	none := media.NewSlots(0)
	require.Nil(t, none, "0: no cap")
	release, err := none.Acquire(t.Context(), "acme")
	require.NoError(t, err)
	release()
}
