package budgets_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/app/budgets"
	"github.com/ai-job-gateway/gateway/internal/webhooksign"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// receiver records the events it is sent and answers each with the next
// of its statuses (then 204).
type receiver struct {
	mu       sync.Mutex
	statuses []int
	got      []*http.Request
	bodies   [][]byte
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, req)
	r.bodies = append(r.bodies, body)
	status := http.StatusNoContent
	if len(r.statuses) > 0 {
		status, r.statuses = r.statuses[0], r.statuses[1:]
	}
	w.WriteHeader(status)
}

// newSigner is a signer of a new key.
func newSigner(t *testing.T) *webhooksign.Signer {
	t.Helper()
	seed, err := webhooksign.GenerateSeed()
	require.NoError(t, err)
	signer, err := webhooksign.NewSigner(seed)
	require.NoError(t, err)
	return signer
}

// requireSettled: notification id is no longer due, however late it is
// asked for (delivered, or given up).
func requireSettled(t *testing.T, st *store.Store, id string) {
	t.Helper()
	due, err := st.Usage.DueBudgetNotifications(context.Background(), time.Now().Add(48*time.Hour), 100)
	require.NoError(t, err)
	for _, n := range due {
		require.NotEqual(t, id, n.ID, "notification %s is still due", id)
	}
}

func TestNotifierDeliversQueuedThresholdsUntilTheyArrive(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t)
	rcv := &receiver{statuses: []int{http.StatusServiceUnavailable}}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	signer := newSigner(t)

	tenant := &store.Tenant{ID: "acme-" + uuid.NewString()[:6], NotificationURL: srv.URL + "/budgets"}
	require.NoError(t, st.Routing.CreateTenant(ctx, tenant))
	budget := store.Budget{ID: "day-minute", Period: store.PeriodDay, Unit: "minute", Limit: 10e9, Thresholds: []int{50, 80}}
	now := time.Now().UTC().Truncate(time.Second)
	out, err := st.Usage.ReserveBudget(ctx, uuid.NewString(), tenant.ID, []store.BudgetCharge{{Budget: budget, Amount: 6e9}}, now)
	require.NoError(t, err)
	require.True(t, out.OK)
	require.Len(t, out.Crossed, 1, "60 %% crosses 50 only")

	n := &budgets.Notifier{Store: st.Usage, Tenants: st.Routing, Signer: signer, Client: srv.Client()}
	delivered, err := n.Deliver(ctx, now)
	require.NoError(t, err)
	require.Zero(t, delivered, "the receiver answered 503")
	due, err := st.Usage.DueBudgetNotifications(ctx, now.Add(700*time.Millisecond), 10)
	require.NoError(t, err)
	require.Empty(t, due, "the next attempt waits a second or so, as a job's")
	due, err = st.Usage.DueBudgetNotifications(ctx, now.Add(1200*time.Millisecond), 10)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, 1, due[0].Attempts)

	delivered, err = n.Deliver(ctx, now.Add(10*time.Second))
	require.NoError(t, err)
	require.Equal(t, 1, delivered)
	requireSettled(t, st, due[0].ID)
	delivered, err = n.Deliver(ctx, now.Add(time.Hour))
	require.NoError(t, err)
	require.Zero(t, delivered, "a delivered event is not sent again")

	log, err := st.Webhooks.WebhookDeliveries(ctx, store.BudgetDeliveries(tenant.ID, budget.ID))
	require.NoError(t, err)
	require.Len(t, log, 2, "every attempt in the budget's delivery log")
	require.Equal(t, []int{http.StatusServiceUnavailable, http.StatusNoContent}, []int{log[0].StatusCode, log[1].StatusCode})
	require.Equal(t, "receiver answered 503 Service Unavailable", log[0].Error)
	require.Equal(t, []int{1, 2}, []int{log[0].Attempt, log[1].Attempt})
	require.Equal(t, due[0].ID, log[1].MessageID)
	require.True(t, log[1].AttemptedAt.Equal(now.Add(10*time.Second)))

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	require.Len(t, rcv.got, 2)
	first, second := rcv.got[0], rcv.got[1]
	require.Equal(t, due[0].ID, first.Header.Get("webhook-id"))
	require.Equal(t, first.Header.Get("webhook-id"), second.Header.Get("webhook-id"), "the same id on every attempt")
	require.Equal(t, "ai-job-gateway-webhooks/1", second.Header.Get("User-Agent"))
	require.NoError(t, webhooksign.Verify(signer.PublicKey(), second.Header.Get("webhook-id"), second.Header.Get("webhook-timestamp"),
		rcv.bodies[1], second.Header.Get("webhook-signature"), now.Add(10*time.Second), 0))
	var event budgets.Event
	require.NoError(t, json.Unmarshal(rcv.bodies[1], &event))
	require.Equal(t, "budget.threshold", event.Event)
	require.Equal(t, budgets.EventData{Tenant: tenant.ID, Budget: "day-minute", PeriodStart: budget.PeriodStart(now), Threshold: 50,
		Spent: "6", Limit: "10", Unit: "minute", Period: "day"}, event.Data)
}

func TestNotifierStopsWhenTheReceiverAnswers410(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t)
	rcv := &receiver{statuses: []int{http.StatusGone}}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	signer := newSigner(t)
	tenant := &store.Tenant{ID: "gone-" + uuid.NewString()[:6], NotificationURL: srv.URL}
	require.NoError(t, st.Routing.CreateTenant(ctx, tenant))
	budget := store.Budget{ID: "day-usd", Period: store.PeriodDay, Currency: "USD", Limit: 1e9, Thresholds: []int{100}}
	now := time.Now().UTC()
	_, err := st.Usage.ReserveBudget(ctx, uuid.NewString(), tenant.ID, []store.BudgetCharge{{Budget: budget, Amount: 1e9}}, now)
	require.NoError(t, err)
	due, err := st.Usage.DueBudgetNotifications(ctx, now, 10)
	require.NoError(t, err)
	require.Len(t, due, 1)

	n := &budgets.Notifier{Store: st.Usage, Tenants: st.Routing, Signer: signer, Client: srv.Client()}
	delivered, err := n.Deliver(ctx, now)
	require.NoError(t, err)
	require.Zero(t, delivered)
	requireSettled(t, st, due[0].ID) // 410 Gone is not retried
	log, err := st.Webhooks.WebhookDeliveries(ctx, store.BudgetDeliveries(tenant.ID, budget.ID))
	require.NoError(t, err)
	require.Len(t, log, 1)
	require.Equal(t, http.StatusGone, log[0].StatusCode)
}

func TestNotifierGivesUp(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	t.Cleanup(srv.Close)
	signer := newSigner(t)
	budget := store.Budget{ID: "day-usd", Period: store.PeriodDay, Currency: "USD", Limit: 1e9, Thresholds: []int{100}}
	now := time.Now().UTC()

	down := &store.Tenant{ID: "down-" + uuid.NewString()[:6], NotificationURL: srv.URL}
	silent := &store.Tenant{ID: "silent-" + uuid.NewString()[:6]}
	for _, tenant := range []*store.Tenant{down, silent} {
		require.NoError(t, st.Routing.CreateTenant(ctx, tenant))
		_, err := st.Usage.ReserveBudget(ctx, uuid.NewString(), tenant.ID, []store.BudgetCharge{{Budget: budget, Amount: 1e9}}, now)
		require.NoError(t, err)
	}
	n := &budgets.Notifier{Store: st.Usage, Tenants: st.Routing, Signer: signer, Client: srv.Client(), GiveUpAfter: time.Hour}
	_, err := n.Deliver(ctx, now)
	require.NoError(t, err)
	due, err := st.Usage.DueBudgetNotifications(ctx, now.Add(time.Hour), 10)
	require.NoError(t, err)
	require.Len(t, due, 1, "the tenant without a notification URL has nothing to wait for")
	require.Equal(t, down.ID, due[0].Tenant)
	log, err := st.Webhooks.WebhookDeliveries(ctx, store.BudgetDeliveries(silent.ID, budget.ID))
	require.NoError(t, err)
	require.Len(t, log, 1)
	require.Equal(t, "not sent: the tenant has no notification_url", log[0].Error)

	_, err = n.Deliver(ctx, now.Add(time.Hour))
	require.NoError(t, err)
	requireSettled(t, st, due[0].ID) // given up at the end of the window, an hour here
	log, err = st.Webhooks.WebhookDeliveries(ctx, store.BudgetDeliveries(down.ID, budget.ID))
	require.NoError(t, err)
	require.NotEmpty(t, log)
	require.NotEmpty(t, log[len(log)-1].Error, "no attempt succeeded")
	removed, err := st.Usage.DeleteBudgetNotificationsBefore(ctx, now.Add(time.Minute))
	require.NoError(t, err)
	require.EqualValues(t, 2, removed)
}

// A key's budget names its key in its events.
func TestNotifierEventNamesTheBudgetsKey(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t)
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)

	tenant := &store.Tenant{ID: "acme-" + uuid.NewString()[:6], NotificationURL: srv.URL + "/budgets"}
	require.NoError(t, st.Routing.CreateTenant(ctx, tenant))
	key := "aaaaaaaaaaaaaaaa"
	budget := store.Budget{ID: "ci", APIKey: &key, Period: store.PeriodDay, Unit: "token", Limit: 10e9, Thresholds: []int{50}}
	now := time.Now().UTC().Truncate(time.Second)
	out, err := st.Usage.ReserveBudget(ctx, uuid.NewString(), tenant.ID, []store.BudgetCharge{{Budget: budget, Amount: 6e9}}, now)
	require.NoError(t, err)
	require.Len(t, out.Crossed, 1)

	n := &budgets.Notifier{Store: st.Usage, Tenants: st.Routing, Signer: newSigner(t), Client: srv.Client()}
	delivered, err := n.Deliver(ctx, now)
	require.NoError(t, err)
	require.Equal(t, 1, delivered)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	var event struct {
		Data map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal(rcv.bodies[0], &event))
	require.Equal(t, key, event.Data["api_key"])
	require.Contains(t, event.Data, "application")
	require.Nil(t, event.Data["application"])
}
