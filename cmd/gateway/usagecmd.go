package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// usageFlags are the flags of `gateway usage` (docs/operations.md, Usage
// from the command line).
type usageFlags struct {
	tenant, service, provider, application string
	from, to, groupBy, output              string
}

func (f *usageFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.tenant, "tenant", "", "only this tenant's usage (default: every tenant)")
	fs.StringVar(&f.service, "service", "", "only this service's usage")
	fs.StringVar(&f.provider, "provider", "", "only this provider's usage")
	fs.StringVar(&f.application, "application", "", "only this application's usage")
	fs.StringVar(&f.from, "from", "", "start, RFC 3339 or YYYY-MM-DD in UTC (default: the start of the month --to ends)")
	fs.StringVar(&f.to, "to", "", "end, excluded, RFC 3339 or YYYY-MM-DD in UTC (default: now)")
	fs.StringVar(&f.groupBy, "group-by", "", "comma-separated keys: service, provider, application, api_key, unit, day, tenant (default: one row per currency)")
	registerOutput(fs, &f.output, "output format: text, json or csv")
}

// query turns the flags into a store query, now being the clock.
func (f usageFlags) query(now time.Time) (store.UsageQuery, error) {
	q := store.UsageQuery{Tenant: f.tenant, Provider: f.provider}
	if f.service != "" {
		if _, ok := jobs.LookupService(f.service); !ok {
			return q, usageErrorf("--service %q: not a service", f.service)
		}
		q.Service = jobs.ServiceID(f.service)
	}
	if f.application != "" {
		q.Application = &f.application
	}
	parse := func(name, v string) (time.Time, error) {
		if t, err := time.Parse(time.DateOnly, v); err == nil {
			return t, nil
		}
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return t.UTC(), nil
		}
		return time.Time{}, usageErrorf("--%s %q: use an RFC 3339 time or YYYY-MM-DD", name, v)
	}
	var err error
	q.To = now.UTC()
	if f.to != "" {
		if q.To, err = parse("to", f.to); err != nil {
			return q, err
		}
	}
	last := q.To.Add(-time.Nanosecond)
	q.From = time.Date(last.Year(), last.Month(), 1, 0, 0, 0, 0, time.UTC)
	if f.from != "" {
		if q.From, err = parse("from", f.from); err != nil {
			return q, err
		}
	}
	if !q.From.Before(q.To) {
		return q, usageErrorf("--from %s is not before --to %s", q.From.Format(time.RFC3339), q.To.Format(time.RFC3339))
	}
	if f.groupBy == "" {
		return q, nil
	}
	for _, part := range strings.Split(f.groupBy, ",") {
		k := store.UsageKey(strings.TrimSpace(part))
		if !slices.Contains(store.UsageKeys(), k) || slices.Contains(q.GroupBy, k) {
			return q, usageErrorf("--group-by %q: give each of service, provider, application, api_key, unit, day, tenant at most once", f.groupBy)
		}
		q.GroupBy = append(q.GroupBy, k)
	}
	return q, nil
}

// runUsage prints the usage ledger's sums as the store has them.
func runUsage(ctx context.Context, cfg config, f usageFlags, stdout io.Writer) error {
	if f.output != "text" && f.output != "json" && f.output != "csv" {
		return usageErrorf("-o %q: use text, json or csv", f.output)
	}
	q, err := f.query(time.Now())
	if err != nil {
		return err
	}
	st, err := openJobStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := st.Usage.UsageReport(ctx, q)
	if err != nil {
		return err
	}
	switch f.output {
	case "json":
		return writeJSON(stdout, usageReportJSON(q, rep))
	case "csv":
		return writeUsageCSV(stdout, q.GroupBy, rep.Rows)
	}
	keys := slices.DeleteFunc(slices.Clone(q.GroupBy), func(k store.UsageKey) bool { return k == store.UsageByUnit })
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, k := range keys {
		fmt.Fprintf(w, "%s\t", strings.ToUpper(string(k)))
	}
	fmt.Fprintln(w, "QUANTITY\tUNIT\tJOBS\tENTRIES\tCOST\tCURRENCY")
	for _, r := range rep.Rows {
		for _, k := range keys {
			fmt.Fprintf(w, "%s\t", dash(r.Key(k)))
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%s\n", usageQuantity(r.Quantity), dash(r.Unit), r.Jobs, r.Entries, jobs.NanosDecimal(r.CostNanos), r.Currency)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	tenant := q.Tenant
	if tenant == "" {
		tenant = "every tenant"
	}
	fmt.Fprintf(stdout, "%s, %s to %s (excluded):", tenant, q.From.Format(time.RFC3339), q.To.Format(time.RFC3339))
	if len(rep.Totals) == 0 {
		fmt.Fprint(stdout, " nothing billed")
	}
	for i, t := range rep.Totals {
		if i > 0 {
			fmt.Fprint(stdout, ";")
		}
		fmt.Fprintf(stdout, " %s %s in %d jobs", jobs.NanosDecimal(t.CostNanos), t.Currency, t.Jobs)
	}
	fmt.Fprintln(stdout)
	return nil
}

// usageQuantity is a sum of quantities to their nine decimals.
func usageQuantity(q float64) string {
	return strconv.FormatFloat(math.Round(q*1e9)/1e9, 'f', -1, 64)
}

// usageReportJSON is `gateway usage -o json`: rows and totals with the
// members of the API's (docs/api.md, Usage report).
func usageReportJSON(q store.UsageQuery, rep *store.UsageReport) any {
	row := func(r store.UsageRow, keys []store.UsageKey) map[string]any {
		out := map[string]any{"quantity": json.Number(usageQuantity(r.Quantity)), "jobs": r.Jobs, "entries": r.Entries,
			"cost": jobs.Cost{Nanos: r.CostNanos, Currency: r.Currency}}
		for _, k := range keys {
			out[string(k)] = r.Key(k)
		}
		if r.Unit != "" {
			out["unit"] = r.Unit
		}
		return out
	}
	rows, totals := []map[string]any{}, []map[string]any{}
	for _, r := range rep.Rows {
		rows = append(rows, row(r, q.GroupBy))
	}
	for _, r := range rep.Totals {
		totals = append(totals, row(r, nil))
	}
	return map[string]any{"tenant": q.Tenant, "from": q.From, "to": q.To, "group_by": append([]store.UsageKey{}, q.GroupBy...),
		"rows": rows, "totals": totals}
}

// writeUsageCSV writes rows as GET /v1/usage's CSV does.
func writeUsageCSV(out io.Writer, groupBy []store.UsageKey, rows []store.UsageRow) error {
	keys := slices.DeleteFunc(slices.Clone(groupBy), func(k store.UsageKey) bool { return k == store.UsageByUnit })
	w := csv.NewWriter(out)
	var header []string
	for _, k := range keys {
		header = append(header, string(k))
	}
	_ = w.Write(append(header, "quantity", "unit", "jobs", "cost_amount", "currency"))
	for _, r := range rows {
		var record []string
		for _, k := range keys {
			record = append(record, r.Key(k))
		}
		_ = w.Write(append(record, usageQuantity(r.Quantity), r.Unit, strconv.FormatInt(r.Jobs, 10), jobs.NanosDecimal(r.CostNanos), r.Currency))
	}
	w.Flush()
	return w.Error()
}
