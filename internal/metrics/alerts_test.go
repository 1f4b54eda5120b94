package metrics_test

import (
	"bufio"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/ai-job-gateway/gateway/internal/metrics"
)

// TestAlertRules keeps deploy/prometheus/alerts.yaml true
// (docs/operations.md, Metrics): Prometheus' own parser accepts it
// (PromQL and templates included), every rule says how bad and what to
// read, and every metric and label it queries is one this package exposes.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	promql := parser.NewParser(parser.Options{})
	groups, errs := rulefmt.ParseFile(filepath.Join("..", "..", "deploy", "prometheus", "alerts.yaml"), false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	require.Empty(t, errs)
	require.NotEmpty(t, groups.Groups)

	exposed := exposedLabels(t)
	anchors := docAnchors(t, filepath.Join("..", "..", "docs", "operations.md"))
	seen := map[string]bool{}
	for _, g := range groups.Groups {
		require.NotEmpty(t, g.Rules, g.Name)
		for _, r := range g.Rules {
			name := r.Alert
			require.NotEmpty(t, name, "group %s: a recording rule", g.Name)
			require.False(t, seen[name], "alert %s twice", name)
			seen[name] = true
			require.Positive(t, time.Duration(r.For), "%s: no for", name)
			require.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"], name)
			require.NotEmpty(t, r.Annotations["summary"], name)
			require.Contains(t, r.Annotations["description"], "{{ $", "%s: the description names nothing", name)
			runbook, ok := strings.CutPrefix(r.Annotations["runbook_url"], "docs/operations.md#")
			require.True(t, ok, "%s: runbook_url %q", name, r.Annotations["runbook_url"])
			require.True(t, anchors[runbook], "%s: docs/operations.md has no section #%s", name, runbook)

			expr, err := promql.ParseExpr(r.Expr)
			require.NoError(t, err, name)
			selectors := 0
			parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
				vs, ok := node.(*parser.VectorSelector)
				if !ok {
					return nil
				}
				selectors++
				labels, ok := exposed[vs.Name]
				require.True(t, ok, "%s queries %s, which is not exposed", name, vs.Name)
				for _, m := range vs.LabelMatchers {
					if m.Name != "__name__" {
						require.True(t, labels[m.Name], "%s matches %s on %s, which has no such label", name, vs.Name, m.Name)
					}
				}
				return nil
			})
			require.Positive(t, selectors, name)
		}
	}
}

// TestPrometheusLoadsTheAlertRules checks that the compose stack's
// Prometheus loads deploy/prometheus/alerts.yaml: each of
// deploy/prometheus.yaml's rule_files is a file the prometheus service
// mounts, and the alert rules are one of them.
func TestPrometheusLoadsTheAlertRules(t *testing.T) {
	t.Parallel()
	deploy := filepath.Join("..", "..", "deploy")
	var config struct {
		RuleFiles []string `yaml:"rule_files"`
	}
	data, err := os.ReadFile(filepath.Join(deploy, "prometheus.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &config))
	var compose struct {
		Services map[string]struct {
			Volumes []string `yaml:"volumes"`
		} `yaml:"services"`
	}
	data, err = os.ReadFile(filepath.Join(deploy, "docker-compose.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &compose))
	mounted := map[string]string{} // target: source
	for _, v := range compose.Services["prometheus"].Volumes {
		parts := strings.Split(v, ":")
		require.GreaterOrEqual(t, len(parts), 2, v)
		mounted[parts[1]] = filepath.Clean(parts[0])
	}
	require.NotEmpty(t, config.RuleFiles)
	var sources []string
	for _, f := range config.RuleFiles {
		src, ok := mounted[f]
		require.True(t, ok, "rule file %s is not mounted into the prometheus service", f)
		sources = append(sources, src)
	}
	require.Contains(t, sources, filepath.Join("prometheus", "alerts.yaml"))
}

// exposedLabels scrapes a registry with one sample of every gateway metric
// and answers each series name (histograms' _bucket, _sum and _count) with
// its label names.
func exposedLabels(t *testing.T) map[string]map[string]bool {
	t.Helper()
	m := metrics.New()
	recordOneOfEach(m)
	m.Usage("llm-tasks", "p", "token", 10, "USD", 0.1, true)
	m.BudgetThreshold(80)
	m.BudgetNotification("delivered")
	m.Backlog(func(ctx context.Context) (int64, error) { return 1, nil })

	series := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? `)
	label := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
	out := map[string]map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(scrape(t, m)))
	for sc.Scan() {
		s := series.FindStringSubmatch(sc.Text())
		if s == nil {
			continue
		}
		if out[s[1]] == nil {
			out[s[1]] = map[string]bool{}
		}
		for _, l := range label.FindAllStringSubmatch(s[2], -1) {
			out[s[1]][l[1]] = true
		}
	}
	require.NoError(t, sc.Err())
	require.Contains(t, out, "gateway_job_starts_pending")
	return out
}

// docAnchors are the anchors GitHub gives the headings of a Markdown file.
func docAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if heading, ok := strings.CutPrefix(line, "#"); ok {
			heading = strings.TrimSpace(strings.TrimLeft(heading, "#"))
			anchors[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(heading), ""), " ", "-")] = true
		}
	}
	return anchors
}
