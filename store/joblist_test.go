package store_test

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
)

// listFixture is 60 jobs over 3 tenants, 3 users, the 4 services, 3
// providers and the 4 statuses, every combination different; jobs 10 to 19
// share one created_at, so their order rests on the id alone.
func listFixture(t *testing.T, s *store.Store) []jobs.Record {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tenants := []string{"acme", "globex", "initech"}
	users := []string{"alice", "bob", "carol"}
	services := []string{"transcriptions", "translations", "video-analyses", "llm-tasks"}
	providerIDs := []string{"alpha", "beta", "gamma"}
	statuses := []jobs.Status{jobs.StatusPending, jobs.StatusProcessing, jobs.StatusCompleted, jobs.StatusFailed}
	var seeded []jobs.Record
	for i := range 60 {
		created := base.Add(time.Duration(i) * 1500 * time.Millisecond)
		if i >= 10 && i < 20 {
			created = base.Add(10 * time.Second)
		}
		job := jobs.Record{
			// Random v7 ids: within the shared created_at their order is
			// not the insertion order.
			ID:             uuid.Must(uuid.NewV7()).String(),
			Service:        jobs.ServiceID(services[i%4]),
			Tenant:         tenants[i%3],
			UserID:         users[(i/3)%3],
			Provider:       providerIDs[(i/2)%3],
			Status:         statuses[(i/5)%4],
			Progress:       i,
			PolicyID:       "0193a5d2-7c4e-7b1a-9f3e-2d6c8b4a1e07",
			Application:    "app",
			Input:          `{"type":"audio","url":"https://example.test/a.wav"}`,
			Options:        `{"format":"srt"}`,
			Routing:        `{"provider_id":"alpha"}`,
			RoutingHistory: `[{"provider_id":"alpha"}]`,
			Result:         `{"content":"x"}`,
			ErrorCode:      "E",
			ErrorMessage:   "failed",
			ClientMeta:     fmt.Sprintf(`{"n":%d}`, i),
			WorkerID:       "worker-1",
			Revision:       3,
			CreatedAt:      created,
			ProcessedAt:    listTimePtr(created.Add(time.Second)),
			CompletedAt:    listTimePtr(created.Add(time.Minute)),
			UpdatedAt:      created.Add(time.Minute),
		}
		seeded = append(seeded, job)
	}
	// Insert in shuffled order: the listing's order must come from the
	// query, not from the table.
	for _, i := range []int{7, 3, 59, 0, 12, 45} {
		require.NoError(t, s.Jobs.InsertJob(ctx, &seeded[i]))
	}
	for i := range seeded {
		require.NoError(t, s.Jobs.InsertJob(ctx, &seeded[i])) // repeats are no-ops
	}
	return seeded
}

func listTimePtr(v time.Time) *time.Time { return &v }

// expectedList is the reference: the jobs matching f, newest first, ties
// by id descending.
func expectedList(seeded []jobs.Record, f store.JobFilter) []string {
	var out []jobs.Record
	for _, j := range seeded {
		if (f.Tenant == "" || j.Tenant == f.Tenant) && (f.UserID == "" || j.UserID == f.UserID) &&
			(f.Service == "" || j.Service == f.Service) && (f.Provider == "" || j.Provider == f.Provider) &&
			(f.Status == "" || j.Status == f.Status) {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b jobs.Record) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	ids := make([]string, len(out))
	for i, j := range out {
		ids[i] = j.ID
	}
	return ids
}

func jobIDs(seeded []jobs.Record) []string {
	ids := make([]string, len(seeded))
	for i, j := range seeded {
		ids[i] = j.ID
	}
	return ids
}

func TestListJobsFilters(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		seeded := listFixture(t, s)
		filters := []store.JobFilter{
			{},
			{Tenant: "acme"},
			{Tenant: "globex"},
			{UserID: "bob"},
			{Service: "video-analyses"},
			{Provider: "gamma"},
			{Status: jobs.StatusFailed},
			{Tenant: "acme", UserID: "carol"},
			{Tenant: "initech", Service: "translations"},
			{Tenant: "globex", Provider: "beta"},
			{Tenant: "acme", Status: jobs.StatusPending},
			{Tenant: "acme", Service: "transcriptions", Status: jobs.StatusCompleted},
			{Tenant: "acme", UserID: "alice", Service: "transcriptions", Provider: "alpha", Status: jobs.StatusPending},
			{Tenant: "nobody"},
			{Tenant: "acme", Service: "llm-tasks", Status: jobs.StatusFailed, Provider: "gamma", UserID: "bob"},
		}
		for _, f := range filters {
			want := expectedList(seeded, f)
			got, total, err := s.Jobs.ListJobs(ctx, f, 0, 100)
			require.NoError(t, err, "%+v", f)
			require.Equal(t, want, jobIDs(got), "filter %+v", f)
			require.Equal(t, int64(len(want)), total, "filter %+v", f)
		}
		// The fixture makes the filters meaningful: each one narrows.
		require.Len(t, expectedList(seeded, store.JobFilter{}), 60)
		require.Len(t, expectedList(seeded, store.JobFilter{Tenant: "acme"}), 20)
		require.Len(t, expectedList(seeded, store.JobFilter{Tenant: "acme", Status: jobs.StatusPending}), 5)
		require.Len(t, expectedList(seeded, store.JobFilter{Tenant: "acme", UserID: "alice", Service: "transcriptions", Provider: "alpha", Status: jobs.StatusPending}), 1)
	})
}

// TestListJobsByErrorCode: the error code is filtered in the query, so a
// page holds the newest jobs with that code however many newer jobs have
// another (gateway jobs retry --error-code --limit).
func TestListJobsByErrorCode(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		var wanted []string
		for i := range 12 {
			id, code := uuid.Must(uuid.NewV7()).String(), "PROVIDERS_EXHAUSTED"
			if i < 3 { // the oldest three, newest first
				code, wanted = "NO_ELIGIBLE_PROVIDER", append([]string{id}, wanted...)
			}
			require.NoError(t, s.Jobs.InsertJob(ctx, &jobs.Record{
				ID: id, Service: "llm-tasks", Tenant: "acme", UserID: "alice", Status: jobs.StatusFailed,
				ErrorCode: code, CreatedAt: base.Add(time.Duration(i) * time.Second),
			}))
		}
		f := store.JobFilter{Status: jobs.StatusFailed, ErrorCode: "NO_ELIGIBLE_PROVIDER"}
		page, total, err := s.Jobs.ListJobs(ctx, f, 0, 2)
		require.NoError(t, err)
		require.Equal(t, wanted[:2], jobIDs(page), "the newest two with the code, past the newer jobs without it")
		require.Equal(t, int64(3), total)
		page, total, err = s.Jobs.ListJobs(ctx, store.JobFilter{Tenant: "acme", ErrorCode: "NO_ELIGIBLE_PROVIDER"}, 0, 10)
		require.NoError(t, err)
		require.Equal(t, wanted, jobIDs(page))
		require.Equal(t, int64(3), total)
	})
}

func TestListJobsPagination(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		seeded := listFixture(t, s)
		all := expectedList(seeded, store.JobFilter{})
		// Walk the whole listing in pages of 7: pages tile it exactly and
		// every page reports the same total, full pages and the last,
		// partial one alike.
		var walked []string
		for offset := 0; offset < 60; offset += 7 {
			page, total, err := s.Jobs.ListJobs(ctx, store.JobFilter{}, offset, 7)
			require.NoError(t, err)
			require.Equal(t, int64(60), total, "offset %d", offset)
			require.Equal(t, all[offset:min(offset+7, 60)], jobIDs(page), "offset %d", offset)
			walked = append(walked, jobIDs(page)...)
		}
		require.Equal(t, all, walked)

		acme := expectedList(seeded, store.JobFilter{Tenant: "acme"})
		for _, tc := range []struct {
			name          string
			offset, limit int
			want          []string
		}{
			{"exact multiple, last full page", 10, 10, acme[10:20]},
			{"offset at the end", 20, 10, []string{}},
			{"offset past the end", 45, 10, []string{}},
			{"offset at the far end", math.MaxInt, 20, []string{}},
			{"one job", 19, 1, acme[19:]},
			{"page from the middle", 3, 4, acme[3:7]},
		} {
			page, total, err := s.Jobs.ListJobs(ctx, store.JobFilter{Tenant: "acme"}, tc.offset, tc.limit)
			require.NoError(t, err, tc.name)
			require.Equal(t, int64(20), total, tc.name)
			require.Equal(t, tc.want, jobIDs(page), tc.name)
		}

		page, total, err := s.Jobs.ListJobs(ctx, store.JobFilter{Tenant: "nobody"}, 0, 20)
		require.NoError(t, err)
		require.Empty(t, page)
		require.Zero(t, total)
		page, total, err = s.Jobs.ListJobs(ctx, store.JobFilter{Tenant: "nobody"}, 40, 20)
		require.NoError(t, err)
		require.Empty(t, page)
		require.Zero(t, total)

		_, _, err = s.Jobs.ListJobs(ctx, store.JobFilter{}, 0, 0)
		require.Error(t, err)
		_, _, err = s.Jobs.ListJobs(ctx, store.JobFilter{}, -1, 20)
		require.Error(t, err)
	})
}

func TestListJobsColumns(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		seeded := listFixture(t, s)
		page, _, err := s.Jobs.ListJobs(ctx, store.JobFilter{Tenant: "acme"}, 0, 1)
		require.NoError(t, err)
		require.Len(t, page, 1)
		got := page[0]
		idx := slices.IndexFunc(seeded, func(j jobs.Record) bool { return j.ID == got.ID })
		require.GreaterOrEqual(t, idx, 0)
		want := seeded[idx]
		// What a listing renders is loaded …
		rendered := func(j jobs.Record) map[string]any {
			return map[string]any{"service": j.Service, "tenant": j.Tenant, "user_id": j.UserID,
				"provider": j.Provider, "status": j.Status, "progress": j.Progress, "policy_id": j.PolicyID,
				"routing": j.Routing, "routing_history": j.RoutingHistory, "error_code": j.ErrorCode,
				"error_message": j.ErrorMessage, "client_meta": j.ClientMeta, "worker_id": j.WorkerID}
		}
		require.Equal(t, rendered(want), rendered(got))
		require.True(t, want.CreatedAt.Equal(got.CreatedAt), "created_at %v != %v", got.CreatedAt, want.CreatedAt)
		require.NotNil(t, got.ProcessedAt)
		require.True(t, want.ProcessedAt.Equal(*got.ProcessedAt))
		require.NotNil(t, got.CompletedAt)
		require.True(t, want.CompletedAt.Equal(*got.CompletedAt))
		// … and the documents only a single-job response carries are not.
		require.Empty(t, got.Input)
		require.Empty(t, got.Options)
		require.Empty(t, got.Result)
	})
}

// TestListJobsTotals checks meta.total against the reference for every
// combination of filters, after jobs moved between statuses and providers.
// Pages of one job are full whenever a job matches, so every total is
// counted (from job_counts, or COUNT(*) with a user), not inferred.
func TestListJobsTotals(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		seeded := listFixture(t, s)
		for i := range seeded {
			switch {
			case i%7 == 0:
				seeded[i].Status, seeded[i].Provider = jobs.StatusFailed, "delta"
			case i%11 == 0:
				seeded[i].Status, seeded[i].Provider = jobs.StatusPending, ""
			default:
				continue
			}
			seeded[i].Revision = 4
			require.NoError(t, s.Jobs.SaveJob(ctx, &seeded[i]))
		}
		checked := 0
		for _, tenant := range []string{"", "acme", "globex", "initech", "nobody"} {
			for _, user := range []string{"", "bob"} {
				for _, service := range []string{"", "transcriptions", "translations", "video-analyses", "llm-tasks"} {
					for _, provider := range []string{"", "alpha", "gamma", "delta"} {
						for _, status := range []jobs.Status{"", jobs.StatusPending, jobs.StatusProcessing, jobs.StatusCompleted, jobs.StatusFailed} {
							f := store.JobFilter{Tenant: tenant, UserID: user, Service: jobs.ServiceID(service), Provider: provider, Status: status}
							want := expectedList(seeded, f)
							page, total, err := s.Jobs.ListJobs(ctx, f, 0, 1)
							require.NoError(t, err, "%+v", f)
							require.Equal(t, int64(len(want)), total, "filter %+v", f)
							require.Equal(t, want[:min(1, len(want))], jobIDs(page), "filter %+v", f)
							if len(want) > 1 {
								checked++
							}
						}
					}
				}
			}
		}
		// The combinations are not all empty or single jobs.
		require.Equal(t, 200, checked)
		require.Len(t, expectedList(seeded, store.JobFilter{Provider: "delta"}), 9)
		require.Len(t, expectedList(seeded, store.JobFilter{Status: jobs.StatusPending}), 15)
	})
}

// TestListJobsTotalSources shows where each total comes from by making
// job_counts disagree with the jobs: without a user it is job_counts, with
// one COUNT(*), and the last page's total is its offset plus its length.
func TestListJobsTotalSources(t *testing.T) {
	eachStoreDB(t, func(ctx context.Context, t *testing.T, s *store.Store, db *sql.DB) {
		seeded := listFixture(t, s)
		// Job 0: acme, transcriptions, alpha, pending.
		bucket := `tenant = 'acme' AND service = 'transcriptions' AND provider = 'alpha' AND status = 'pending'`
		oneRow := bucket
		if s.Dialect() == "postgres" { // one of its shards
			oneRow += " AND shard = (SELECT MIN(shard) FROM job_counts WHERE " + bucket + ")"
		}
		_, err := db.Exec("UPDATE job_counts SET n = n + 1000 WHERE " + oneRow)
		require.NoError(t, err)
		for _, tc := range []struct {
			f     store.JobFilter
			limit int
			want  int64
		}{
			{store.JobFilter{}, 10, 1060},
			{store.JobFilter{Tenant: "acme"}, 10, 1020},
			{store.JobFilter{Tenant: "acme", Status: jobs.StatusPending}, 2, 1005},
			{store.JobFilter{Status: jobs.StatusPending, Provider: "alpha"}, 1, 1005},
			{store.JobFilter{Tenant: "globex"}, 10, 20},
			{store.JobFilter{Tenant: "acme", UserID: seeded[0].UserID}, 1, int64(len(expectedList(seeded, store.JobFilter{Tenant: "acme", UserID: seeded[0].UserID})))},
			{store.JobFilter{Tenant: "acme"}, 100, 20}, // the last page
		} {
			_, total, err := s.Jobs.ListJobs(ctx, tc.f, 0, tc.limit)
			require.NoError(t, err)
			require.Equal(t, tc.want, total, "filter %+v, limit %d", tc.f, tc.limit)
		}
	})
}

// TestListJobsByApplicationAndErrorCode: filter[application] and
// filter[error_code] are conditions of the query, alone or together, and
// their totals are counted (job_counts knows neither).
func TestListJobsByApplicationAndErrorCode(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		type seed struct{ tenant, app, code, custom string }
		var seeded []jobs.Record
		for i, sd := range []seed{
			{"acme", "web", "PROVIDER_ERROR", "row-1"}, {"acme", "web", "", ""}, {"acme", "mobile", "PROVIDER_ERROR", "row-2"},
			{"acme", "", "PROVIDER_ERROR", ""}, {"acme", "web", "PROVIDERS_EXHAUSTED", "row-1"}, {"globex", "web", "PROVIDER_ERROR", "row-1"},
			{"acme", "web", "PROVIDER_ERROR", ""},
		} {
			job := jobs.Record{ID: uuid.Must(uuid.NewV7()).String(), Service: jobs.Translations, Tenant: sd.tenant,
				UserID: "alice", Status: jobs.StatusFailed, Application: sd.app, ErrorCode: sd.code, CustomID: sd.custom,
				CreatedAt: base.Add(time.Duration(i) * time.Second)}
			require.NoError(t, s.Jobs.InsertJob(ctx, &job))
			seeded = append(seeded, job)
		}
		ids := func(is ...int) []string {
			out := []string{}
			for _, i := range is {
				out = append(out, seeded[i].ID)
			}
			return out
		}
		for _, tc := range []struct {
			f    store.JobFilter
			want []string // newest first
		}{
			{store.JobFilter{Tenant: "acme", Application: "web"}, ids(6, 4, 1, 0)},
			{store.JobFilter{Tenant: "acme", ErrorCode: "PROVIDER_ERROR"}, ids(6, 3, 2, 0)},
			{store.JobFilter{Tenant: "acme", Application: "web", ErrorCode: "PROVIDER_ERROR"}, ids(6, 0)},
			{store.JobFilter{Application: "web", ErrorCode: "PROVIDER_ERROR"}, ids(6, 5, 0)},
			{store.JobFilter{Tenant: "acme", Application: "mobile", Status: jobs.StatusFailed}, ids(2)},
			{store.JobFilter{Tenant: "acme", Application: "desktop"}, ids()},
			{store.JobFilter{Tenant: "acme", CustomID: "row-1"}, ids(4, 0)},
			{store.JobFilter{Tenant: "acme", CustomID: "row-3"}, ids()},
			{store.JobFilter{Tenant: "acme", CreatedFrom: base.Add(2 * time.Second), CreatedBefore: base.Add(5 * time.Second)}, ids(4, 3, 2)},
			{store.JobFilter{Tenant: "acme", CreatedFrom: base.Add(4 * time.Second)}, ids(6, 4)},
			{store.JobFilter{Tenant: "acme", CreatedBefore: base.Add(time.Second), ErrorCode: "PROVIDER_ERROR"}, ids(0)},
		} {
			// Pages of one job: the total is counted whenever one matches.
			page, total, err := s.Jobs.ListJobs(ctx, tc.f, 0, 1)
			require.NoError(t, err, "%+v", tc.f)
			require.Equal(t, int64(len(tc.want)), total, "%+v", tc.f)
			require.Equal(t, tc.want[:min(1, len(tc.want))], jobIDs(page), "%+v", tc.f)
			page, total, err = s.Jobs.ListJobs(ctx, tc.f, 0, 10)
			require.NoError(t, err)
			require.Equal(t, tc.want, jobIDs(page), "%+v", tc.f)
			require.Equal(t, int64(len(tc.want)), total)
		}
	})
}

// On SQLite, a tenant's listing by error code and application walks the
// tenant's range of idx_jobs_tenant_created newest first: the extra
// conditions neither change the index nor add a sort.
func TestListJobsByApplicationAndErrorCodeUsesTheTenantIndex(t *testing.T) {
	eachStoreDB(t, func(ctx context.Context, t *testing.T, s *store.Store, db *sql.DB) {
		if s.Dialect() != "sqlite" {
			t.Skip("PostgreSQL plans by its statistics")
		}
		// The page's ids query ListJobs makes (JobFilter.where).
		for _, query := range []string{
			"SELECT jobs.id FROM jobs WHERE jobs.tenant = ? AND jobs.error_code = ? ORDER BY jobs.created_at DESC, jobs.id DESC LIMIT 25",
			"SELECT jobs.id FROM jobs WHERE jobs.tenant = ? AND jobs.application = ? ORDER BY jobs.created_at DESC, jobs.id DESC LIMIT 25",
			"SELECT jobs.id FROM jobs WHERE jobs.tenant = ? AND jobs.error_code = ? AND jobs.application = ? ORDER BY jobs.created_at DESC, jobs.id DESC LIMIT 25",
		} {
			args := []any{"acme", "PROVIDER_ERROR"}
			if strings.Count(query, "?") == 3 {
				args = append(args, "web")
			}
			rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
			require.NoError(t, err)
			var plan strings.Builder
			for rows.Next() {
				var id, parent, unused int
				var detail string
				require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
				plan.WriteString(detail + "\n")
			}
			require.NoError(t, rows.Close())
			require.Contains(t, plan.String(), "USING INDEX idx_jobs_tenant_created (tenant=?)", query)
			require.NotContains(t, plan.String(), "TEMP B-TREE", query)
		}
	})
}
