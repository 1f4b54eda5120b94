package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// usageMetrics count what finished jobs consumed and cost (docs/api.md,
// Usage and cost); no tenant label.
type usageMetrics struct {
	quantity *prometheus.CounterVec
	cost     *prometheus.CounterVec
	unpriced *prometheus.CounterVec
	// budgetThresholds counts budget thresholds crossed (docs/api.md, Budgets).
	budgetThresholds *prometheus.CounterVec
	// budgetNotifications counts attempts to deliver budget.threshold
	// events, by outcome.
	budgetNotifications *prometheus.CounterVec
}

func newUsageMetrics(f factory) usageMetrics {
	return usageMetrics{
		quantity: f.counter("gateway_usage_quantity_total", "Usage of billed jobs in their pricing unit (minute, character, page, request, token), by service, provider and unit.",
			"service", "provider", "unit"),
		cost: f.counter("gateway_usage_cost_total", "Cost of billed jobs, by service, provider and currency.",
			"service", "provider", "currency"),
		unpriced: f.counter("gateway_usage_unpriced_total", "Completed jobs costed at zero because nothing prices them (no pricing, amount 0, or no measure for the unit), by service and provider.",
			"service", "provider"),
		budgetThresholds: f.counter("gateway_budget_threshold_crossings_total", "Budget thresholds crossed, by threshold (percent).", "threshold"),
		budgetNotifications: f.counter("gateway_budget_notifications_total",
			"Attempts to deliver budget.threshold events, by outcome: delivered, pending (to be tried again) or failed (given up).", "outcome"),
	}
}

// BudgetThreshold counts a budget threshold crossed.
func (m *Metrics) BudgetThreshold(threshold int) {
	if m == nil {
		return
	}
	m.usage.budgetThresholds.WithLabelValues(strconv.Itoa(threshold)).Inc()
}

// BudgetNotification counts an attempt to deliver a budget.threshold
// event that left it in state (delivered, pending, failed).
func (m *Metrics) BudgetNotification(state string) {
	if m == nil {
		return
	}
	m.usage.budgetNotifications.WithLabelValues(state).Inc()
}

// Usage records a billed job's quantity and cost; unpriced counts it as
// costed at zero for want of a price.
func (m *Metrics) Usage(service, provider, unit string, quantity float64, currency string, cost float64, unpriced bool) {
	if m == nil {
		return
	}
	m.usage.quantity.WithLabelValues(service, provider, unit).Add(quantity)
	m.usage.cost.WithLabelValues(service, provider, currency).Add(cost)
	if unpriced {
		m.usage.unpriced.WithLabelValues(service, provider).Inc()
	}
}
