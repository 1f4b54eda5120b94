package metrics_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/metrics"
)

// TestDashboardUsesTheseMetrics keeps deploy/grafana's dashboard true: every
// gateway metric a panel queries is one this package exposes.
func TestDashboardUsesTheseMetrics(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "gateway-dashboard.json"))
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(data, &dash))
	require.NotEmpty(t, dash.Panels)

	m := metrics.New()
	recordOneOfEach(m)
	m.Usage("llm-tasks", "p", "token", 10, "USD", 0.1, false) // the cost panels
	exposed := scrape(t, m)

	name := regexp.MustCompile(`\b(gateway_[a-z_]+|process_[a-z_]+|go_[a-z_]+)`)
	for _, p := range dash.Panels {
		require.NotEmpty(t, p.Targets, p.Title)
		for _, target := range p.Targets {
			found := name.FindAllString(target.Expr, -1)
			require.NotEmpty(t, found, "%s: %s", p.Title, target.Expr)
			for _, n := range found {
				require.True(t, strings.Contains(exposed, "\n"+n+"{") || strings.Contains(exposed, "\n"+n+" "),
					"panel %q queries %s, which is not exposed", p.Title, n)
			}
		}
	}
}
