package console

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// usageGroups are what the usage page groups a day's usage by, each a
// group_by key of GET /v1/usage (docs/api.md, Usage report).
var usageGroups = []string{"service", "provider", "api_key"}

// usageMeasures are what the usage chart draws.
var usageMeasures = []string{"cost", "quantity"}

// usageSeries is how many colours the chart cycles through (the
// .series-N classes of assets/console.css).
const usageSeries = 8

// Chart geometry, in the SVG's own units (it scales to its box).
const (
	chartWidth  = 720.0
	chartHeight = 260.0
	chartLeft   = 64.0
	chartRight  = 8.0
	chartTop    = 10.0
	chartBottom = 36.0
	chartTicks  = 4
	// chartDayLabels is about how many days the x axis names.
	chartDayLabels = 8
)

// usageRow is a row of GET /v1/usage grouped by day and a group.
type usageRow struct {
	Day      string
	Group    string // "" when the API's key is null
	Unit     string
	Quantity json.Number
	Jobs     int64
	Amount   json.Number
	Currency string
}

// usageForm is the usage page's filters.
type usageForm struct {
	Group, Measure, From, To string
}

// query is the console's query string of f (for the CSV link, whose
// rows are the table's).
func (f usageForm) query() string {
	q := url.Values{"group": {f.Group}, "measure": {f.Measure}}
	if f.From != "" {
		q.Set("from", f.From)
	}
	if f.To != "" {
		q.Set("to", f.To)
	}
	return q.Encode()
}

// usagePage is templates/usage.html's data.
type usagePage struct {
	Form     usageForm
	Groups   []string
	Measures []string
	// From and To are the report's period as the API read it.
	From, To string
	Rows     []usageRow
	Totals   []usageTotal
	Charts   []usageChart
	CSV      string
	Error    string
}

type usageTotal struct {
	Currency string
	Amount   json.Number
	Jobs     int64
}

// usageChart is one SVG: a measure in one currency or unit, a stacked
// bar a day, a segment a group.
type usageChart struct {
	Label    string // "Cost in USD", "Quantity in minute"
	Aria     string
	Width    float64
	Height   float64
	Bars     []chartBar
	XLabels  []chartLabel
	YLabels  []chartLabel
	Legend   []chartLegend
	AxisLeft float64
	AxisBase float64
	AxisEnd  float64
}

type chartBar struct {
	X, Y, W, H float64
	Series     int
	Title      string
}

type chartLabel struct {
	X, Y float64
	Text string
}

type chartLegend struct {
	Name   string
	Series int
}

// usage serves GET /console/usage: GET /v1/usage grouped by day and the
// chosen group, as charts and a table.
func (c *Console) usage(w http.ResponseWriter, r *http.Request, s *session) error {
	form := readUsageForm(r)
	p := usagePage{Form: form, Groups: usageGroups, Measures: usageMeasures, CSV: Path + "usage.csv?" + form.query()}
	rows, meta, a, err := c.usageReport(r, s, form)
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		p.Error = a.message()
	} else {
		p.Rows, p.Totals = rows, meta.totals()
		p.From, p.To = meta.From, meta.To
		p.Charts = usageCharts(rows, form, meta)
	}
	c.render(w, a.Status, "usage", layout{Title: "Usage", Nav: "usage", Tenant: s.Tenant, CSRF: s.CSRFToken, Page: p})
	return nil
}

// usageCSV serves GET /console/usage.csv: the usage page's table as CSV.
func (c *Console) usageCSV(w http.ResponseWriter, r *http.Request, s *session) error {
	form := readUsageForm(r)
	rows, _, a, err := c.usageReport(r, s, form)
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		c.problem(w, a.Status, s, "The gateway refused", a.message())
		return nil
	}
	var buf bytes.Buffer
	out := csv.NewWriter(&buf)
	_ = out.Write([]string{"day", form.Group, "quantity", "unit", "jobs", "cost_amount", "currency"})
	for _, row := range rows {
		_ = out.Write([]string{row.Day, row.Group, row.Quantity.String(), row.Unit, strconv.FormatInt(row.Jobs, 10),
			row.Amount.String(), row.Currency})
	}
	out.Flush()
	if err := out.Error(); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="usage-by-`+form.Group+`.csv"`)
	_, _ = w.Write(buf.Bytes())
	return nil
}

// readUsageForm reads the page's query, an unknown group or measure
// taken as the first.
func readUsageForm(r *http.Request) usageForm {
	in := r.URL.Query()
	f := usageForm{Group: in.Get("group"), Measure: in.Get("measure"), From: in.Get("from"), To: in.Get("to")}
	if !slices.Contains(usageGroups, f.Group) {
		f.Group = usageGroups[0]
	}
	if !slices.Contains(usageMeasures, f.Measure) {
		f.Measure = usageMeasures[0]
	}
	return f
}

// usageMeta is GET /v1/usage's meta.
type usageMeta struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Totals []struct {
		Currency string      `json:"currency"`
		Amount   json.Number `json:"amount"`
		Jobs     int64       `json:"jobs"`
	} `json:"totals"`
}

func (m usageMeta) totals() []usageTotal {
	out := make([]usageTotal, 0, len(m.Totals))
	for _, t := range m.Totals {
		out = append(out, usageTotal{Currency: t.Currency, Amount: t.Amount, Jobs: t.Jobs})
	}
	return out
}

// usageReport calls GET /v1/usage?group_by=day,{group} for form (and
// unit, for quantities); rows and meta are read only from a 200.
func (c *Console) usageReport(r *http.Request, s *session, form usageForm) ([]usageRow, usageMeta, *answer, error) {
	groupBy := "day," + form.Group
	if form.Measure == "quantity" {
		groupBy += ",unit" // a quantity is drawn in its own unit
	}
	query := url.Values{"group_by": {groupBy}}
	if form.From != "" {
		query.Set("from", form.From)
	}
	if form.To != "" {
		query.Set("to", form.To)
	}
	a, err := c.callAs(r, s, http.MethodGet, "/v1/usage", query, nil)
	if err != nil || a.Status != http.StatusOK {
		return nil, usageMeta{}, a, err
	}
	var report struct {
		Data []struct {
			Attributes map[string]json.RawMessage `json:"attributes"`
		} `json:"data"`
		Meta usageMeta `json:"meta"`
	}
	dec := json.NewDecoder(bytes.NewReader(a.Body))
	dec.UseNumber()
	if err := dec.Decode(&report); err != nil {
		return nil, usageMeta{}, nil, err
	}
	rows := make([]usageRow, 0, len(report.Data))
	for _, d := range report.Data {
		var row usageRow
		var cost struct {
			Amount   json.Number `json:"amount"`
			Currency string      `json:"currency"`
		}
		for name, into := range map[string]any{"day": &row.Day, form.Group: &row.Group, "unit": &row.Unit,
			"quantity": &row.Quantity, "jobs": &row.Jobs, "cost": &cost} {
			if raw, ok := d.Attributes[name]; ok && string(raw) != "null" {
				if err := json.Unmarshal(raw, into); err != nil {
					return nil, usageMeta{}, nil, fmt.Errorf("console: usage row %s: %w", name, err)
				}
			}
		}
		row.Amount, row.Currency = cost.Amount, cost.Currency
		rows = append(rows, row)
	}
	return rows, report.Meta, a, nil
}

// usageCharts draws rows as one chart per currency (cost) or unit
// (quantity): a stacked bar per day of the period, a segment per group.
func usageCharts(rows []usageRow, form usageForm, meta usageMeta) []usageChart {
	days := periodDays(meta.From, meta.To)
	dayIndex := map[string]int{}
	for i, d := range days {
		dayIndex[d] = i
	}
	var scales []string // currencies or units, in order of appearance
	byScale := map[string][]usageRow{}
	for _, row := range rows {
		scale := row.Currency
		if form.Measure == "quantity" {
			scale = row.Unit
			if scale == "" {
				scale = "mixed units"
			}
		}
		if _, ok := dayIndex[row.Day]; !ok {
			continue
		}
		if _, ok := byScale[scale]; !ok {
			scales = append(scales, scale)
		}
		byScale[scale] = append(byScale[scale], row)
	}
	var charts []usageChart
	for _, scale := range scales {
		charts = append(charts, drawUsageChart(byScale[scale], scale, form, days))
	}
	return charts
}

// drawUsageChart lays out one chart.
func drawUsageChart(rows []usageRow, scale string, form usageForm, days []string) usageChart {
	label := "Cost in " + scale
	if form.Measure == "quantity" {
		label = "Quantity in " + scale
	}
	value := func(row usageRow) float64 {
		n := row.Amount
		if form.Measure == "quantity" {
			n = row.Quantity
		}
		f, _ := n.Float64()
		return f
	}
	// The day's stack heights, and each group's series.
	sums := make([]float64, len(days))
	series := map[string]int{}
	ch := usageChart{Label: label, Width: chartWidth, Height: chartHeight, AxisLeft: chartLeft,
		AxisBase: chartHeight - chartBottom, AxisEnd: chartWidth - chartRight}
	for _, row := range rows {
		if _, ok := series[row.Group]; !ok {
			series[row.Group] = len(series) % usageSeries
			ch.Legend = append(ch.Legend, chartLegend{Name: groupName(row.Group), Series: series[row.Group]})
		}
		sums[slices.Index(days, row.Day)] += value(row)
	}
	top := niceCeil(slices.Max(sums))
	plotH := ch.AxisBase - chartTop
	slot := (ch.AxisEnd - chartLeft) / float64(len(days))
	barW := math.Max(slot*0.7, 1)
	stacked := make([]float64, len(days))
	for _, row := range rows {
		i := slices.Index(days, row.Day)
		v := value(row)
		h := v / top * plotH
		stacked[i] += h
		ch.Bars = append(ch.Bars, chartBar{X: round2(chartLeft + float64(i)*slot + (slot-barW)/2), Y: round2(ch.AxisBase - stacked[i]),
			W: round2(barW), H: round2(h), Series: series[row.Group],
			Title: fmt.Sprintf("%s, %s: %s %s", row.Day, groupName(row.Group), formatValue(v), scale)})
	}
	for k := 0; k <= chartTicks; k++ {
		v := top * float64(k) / chartTicks
		ch.YLabels = append(ch.YLabels, chartLabel{X: chartLeft - 6, Y: round2(ch.AxisBase - plotH*float64(k)/chartTicks), Text: formatValue(v)})
	}
	every := max(1, (len(days)+chartDayLabels-1)/chartDayLabels)
	for i := 0; i < len(days); i += every {
		ch.XLabels = append(ch.XLabels, chartLabel{X: round2(chartLeft + float64(i)*slot + slot/2), Y: ch.AxisBase + 20, Text: days[i][5:]})
	}
	ch.Aria = fmt.Sprintf("%s per day by %s, %s to %s: %d bars; the table below has every value", label, form.Group,
		days[0], days[len(days)-1], len(ch.Bars))
	return ch
}

// periodDays are the UTC days from from to to (excluded), each
// YYYY-MM-DD; from and to are the report's RFC 3339 times.
func periodDays(from, to string) []string {
	start, err1 := time.Parse(time.RFC3339, from)
	end, err2 := time.Parse(time.RFC3339, to)
	if err1 != nil || err2 != nil || !start.Before(end) {
		return nil
	}
	var days []string
	for d := start.UTC().Truncate(24 * time.Hour); d.Before(end); d = d.AddDate(0, 0, 1) {
		days = append(days, d.Format(time.DateOnly))
	}
	return days
}

// groupName shows a group the API answered null for.
func groupName(g string) string {
	if g == "" {
		return "(none)"
	}
	return g
}

// niceCeil is the least 1, 2 or 5 times a power of ten at least v (1
// for nothing).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func round2(v float64) float64 { return math.Round(v*100) / 100 }
