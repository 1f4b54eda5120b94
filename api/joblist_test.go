package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/api/auth"
	"github.com/ai-job-gateway/gateway/api/devidp"
	"github.com/ai-job-gateway/gateway/internal/jobs"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/storetest"
)

// listPage is a decoded GET /v1/jobs response.
type listPage struct {
	Data []struct {
		ID         string         `json:"id"`
		Type       string         `json:"type"`
		Attributes map[string]any `json:"attributes"`
		Meta       map[string]any `json:"meta"`
	} `json:"data"`
	Meta struct {
		Total     *int64 `json:"total"`
		PageCount *int64 `json:"page_count"`
		Page      *int   `json:"page"`
		PerPage   *int   `json:"per_page"`
	} `json:"meta"`
	Links map[string]*string `json:"links"`
}

// ids are the ids of the page's jobs, in order.
func (p *listPage) ids() []string {
	ids := []string{}
	for _, d := range p.Data {
		ids = append(ids, d.ID)
	}
	return ids
}

// listJobs gets /v1/jobs?query, requires 200 and decodes the page.
func (b *bundle) listJobs(t *testing.T, token, query string, headers ...string) *listPage {
	t.Helper()
	r := b.do(t, http.MethodGet, "/v1/jobs?"+query, token, nil, headers...)
	r.requireStatus(t, http.StatusOK)
	var page listPage
	require.NoError(t, json.Unmarshal(r.Body, &page), "body: %s", r.Body)
	require.NotNil(t, page.Data, "data must be an array: %s", r.Body)
	require.NotNil(t, page.Meta.Total, "meta.total is required: %s", r.Body)
	return &page
}

// listSeeded is the fixture of the listing tests: 24 jobs, newest first,
// over tenants acme and globex, two users each, the four services, two
// providers and the four statuses. Every attribute a filter can select
// varies independently enough that each filter selects a different set.
type listSeeded struct {
	jobs []*jobs.Record // newest first
}

func seedListJobs(t *testing.T, b *bundle) *listSeeded {
	t.Helper()
	services := []string{"transcriptions", "translations", "video-analyses", "llm-tasks"}
	statuses := []jobs.Status{jobs.StatusCompleted, jobs.StatusFailed, jobs.StatusProcessing, jobs.StatusPending}
	var out listSeeded
	for i := range 24 {
		tenant, user := tenantA, userA
		if i%3 == 2 {
			tenant, user = tenantB, userB
		}
		if i%4 == 1 {
			user += "-2"
		}
		status := statuses[(i/2)%4]
		job := jobs.Record{
			Service:   jobs.ServiceID(services[i%4]),
			Tenant:    tenant,
			UserID:    user,
			Status:    status,
			Options:   `{"include_usage":true}`,
			CreatedAt: fixedNow.Add(-time.Duration(i) * time.Minute),
		}
		if i%5 < 2 {
			job.Application = "web"
		}
		if i%7 == 0 {
			job.CustomID = "row-7"
		}
		if status != jobs.StatusPending {
			job.Provider = []string{"alpha", "narrow"}[(i/3)%2]
		}
		switch status {
		case jobs.StatusCompleted:
			job.Result = `{"content":"done"}`
		case jobs.StatusFailed:
			job.ErrorCode, job.ErrorMessage = "PROVIDERS_EXHAUSTED", "every candidate provider failed"
			if i%8 == 3 {
				job.ErrorCode = "NO_ELIGIBLE_PROVIDER"
			}
		case jobs.StatusProcessing:
			job.Progress = 30
		}
		out.jobs = append(out.jobs, b.seed(t, job))
	}
	return &out
}

// where lists the ids of the fixture's jobs that keep, newest first.
func (s *listSeeded) where(keep func(j *jobs.Record) bool) []string {
	ids := []string{}
	for _, j := range s.jobs {
		if keep(j) {
			ids = append(ids, j.ID)
		}
	}
	return ids
}

func TestListJobsConfinedToTheTokenTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seeded := seedListJobs(t, b)
	acme := seeded.where(func(j *jobs.Record) bool { return j.Tenant == tenantA })
	globex := seeded.where(func(j *jobs.Record) bool { return j.Tenant == tenantB })
	require.Len(t, acme, 16)
	require.Len(t, globex, 8)

	// Any valid token may list, without any scope: the listing is of the
	// token's tenant only, newest first.
	page := b.listJobs(t, b.token(t), "page[size]=100")
	require.Equal(t, acme, page.ids())
	require.EqualValues(t, 16, *page.Meta.Total)

	page = b.listJobs(t, b.tokenFor(t, tenantB, userB, "transcriptions:read"), "page[size]=100")
	require.Equal(t, globex, page.ids())
	require.EqualValues(t, 8, *page.Meta.Total)

	// Filters narrow within the tenant; they never widen it.
	page = b.listJobs(t, b.tokenFor(t, tenantB, userB), "filter[user_id]="+userA)
	require.Empty(t, page.ids())
	require.EqualValues(t, 0, *page.Meta.Total)
}

func TestListJobsTenantFilterNeedsCrossTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seedListJobs(t, b)
	regular := b.token(t, allScopes()...)
	for _, query := range []string{"filter[tenant]=" + tenantB, "filter[tenant]=" + tenantA, "filter[tenant]=", "filter[tenant]=x&filter[status]=bogus&page[size]=0"} {
		r := b.do(t, http.MethodGet, "/v1/jobs?"+query, regular, nil)
		requireError(t, r, http.StatusForbidden, "FORBIDDEN", "filter[tenant]")
	}
	// X-Effective-Tenant-Id needs the scope too.
	r := b.do(t, http.MethodGet, "/v1/jobs", regular, nil, auth.HeaderEffectiveTenant, tenantB)
	requireError(t, r, http.StatusForbidden, "FORBIDDEN", auth.HeaderEffectiveTenant)
	// A token without a tenant and without the scope has nothing to list.
	tenantless := b.mint(t, devidp.TokenRequest{Subject: "tooling", Audience: audience})
	requireError(t, b.do(t, http.MethodGet, "/v1/jobs", tenantless, nil), http.StatusForbidden, "FORBIDDEN")
	// No token at all.
	requireError(t, b.do(t, http.MethodGet, "/v1/jobs", "", nil), http.StatusUnauthorized, "UNAUTHORIZED")
}

func TestListJobsCrossTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seeded := seedListJobs(t, b)
	all := seeded.where(func(*jobs.Record) bool { return true })
	globex := seeded.where(func(j *jobs.Record) bool { return j.Tenant == tenantB })
	admin := b.token(t, auth.ScopeCrossTenant)

	// Without filter[tenant]: every tenant.
	page := b.listJobs(t, admin, "page[size]=100")
	require.Equal(t, all, page.ids())
	require.EqualValues(t, 24, *page.Meta.Total)

	// With it: that tenant, even another than the token's.
	page = b.listJobs(t, admin, "filter[tenant]="+tenantB+"&page[size]=100")
	require.Equal(t, globex, page.ids())
	page = b.listJobs(t, admin, "filter[tenant]=nobody")
	require.Empty(t, page.ids())
	require.EqualValues(t, 0, *page.Meta.Total)

	// A tenant-less administrative token sees every tenant as well.
	tooling := b.mint(t, devidp.TokenRequest{Subject: "tooling", Scopes: []string{auth.ScopeCrossTenant}, Audience: audience})
	require.Equal(t, all, b.listJobs(t, tooling, "page[size]=100").ids())

	// Acting as a tenant shows that tenant's listing; naming another
	// tenant then is refused, naming the same one is redundant but fine.
	page = b.listJobs(t, admin, "page[size]=100", auth.HeaderEffectiveTenant, tenantB)
	require.Equal(t, globex, page.ids())
	page = b.listJobs(t, admin, "page[size]=100&filter[tenant]="+tenantB, auth.HeaderEffectiveTenant, tenantB)
	require.Equal(t, globex, page.ids())
	r := b.do(t, http.MethodGet, "/v1/jobs?filter[tenant]="+tenantA, admin, nil, auth.HeaderEffectiveTenant, tenantB)
	requireError(t, r, http.StatusForbidden, "FORBIDDEN", "filter[tenant]")

	// An empty filter[tenant] is a mistake, not "every tenant".
	r = b.do(t, http.MethodGet, "/v1/jobs?filter[tenant]=", admin, nil)
	requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", "filter[tenant]")
}

func TestListJobsFilters(t *testing.T) {
	t.Parallel()
	for name, openStore := range map[string]func(testing.TB) *store.Store{"sqlite": storetest.SQLite, "postgres": storetest.Postgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupWith(t, openStore)
			seeded := seedListJobs(t, b)
			regular := b.token(t)
			admin := b.token(t, auth.ScopeCrossTenant)
			for _, tc := range []struct {
				query string
				admin bool
				keep  func(j *jobs.Record) bool
			}{
				{"filter[user_id]=" + userA + "-2", false, func(j *jobs.Record) bool { return j.Tenant == tenantA && j.UserID == userA+"-2" }},
				{"filter[service]=video-analyses", false, func(j *jobs.Record) bool { return j.Tenant == tenantA && j.Service == "video-analyses" }},
				{"filter[provider]=narrow", false, func(j *jobs.Record) bool { return j.Tenant == tenantA && j.Provider == "narrow" }},
				{"filter[status]=failed", false, func(j *jobs.Record) bool { return j.Tenant == tenantA && j.Status == jobs.StatusFailed }},
				{"filter[status]=pending", false, func(j *jobs.Record) bool { return j.Tenant == tenantA && j.Status == jobs.StatusPending }},
				{"filter[service]=transcriptions&filter[status]=completed&filter[provider]=alpha", false, func(j *jobs.Record) bool {
					return j.Tenant == tenantA && j.Service == "transcriptions" && j.Status == jobs.StatusCompleted && j.Provider == "alpha"
				}},
				{"filter[error_code]=NO_ELIGIBLE_PROVIDER", false, func(j *jobs.Record) bool { return j.Tenant == tenantA && j.ErrorCode == "NO_ELIGIBLE_PROVIDER" }},
				{"filter[application]=web", false, func(j *jobs.Record) bool { return j.Tenant == tenantA && j.Application == "web" }},
				{"filter[application]=web&filter[status]=failed&filter[error_code]=PROVIDERS_EXHAUSTED", false, func(j *jobs.Record) bool {
					return j.Tenant == tenantA && j.Application == "web" && j.Status == jobs.StatusFailed && j.ErrorCode == "PROVIDERS_EXHAUSTED"
				}},
				{"filter[error_code]=NO_ELIGIBLE_PROVIDER", true, func(j *jobs.Record) bool { return j.ErrorCode == "NO_ELIGIBLE_PROVIDER" }},
				{"filter[custom_id]=row-7", false, func(j *jobs.Record) bool { return j.Tenant == tenantA && j.CustomID == "row-7" }},
				{"filter[created_from]=" + fixedNow.Add(-10*time.Minute).Format(time.RFC3339) + "&filter[created_before]=" + fixedNow.Add(-3*time.Minute).Format(time.RFC3339), false,
					func(j *jobs.Record) bool {
						return j.Tenant == tenantA && !j.CreatedAt.Before(fixedNow.Add(-10*time.Minute)) && j.CreatedAt.Before(fixedNow.Add(-3*time.Minute))
					}},
				{"filter[tenant]=" + tenantB + "&filter[application]=web", true, func(j *jobs.Record) bool { return j.Tenant == tenantB && j.Application == "web" }},
				{"filter[user_id]=" + userB, true, func(j *jobs.Record) bool { return j.UserID == userB }},
				{"filter[service]=llm-tasks", true, func(j *jobs.Record) bool { return j.Service == "llm-tasks" }},
				{"filter[provider]=alpha", true, func(j *jobs.Record) bool { return j.Provider == "alpha" }},
				{"filter[status]=processing", true, func(j *jobs.Record) bool { return j.Status == jobs.StatusProcessing }},
				{"filter[tenant]=" + tenantB + "&filter[status]=completed", true, func(j *jobs.Record) bool {
					return j.Tenant == tenantB && j.Status == jobs.StatusCompleted
				}},
				{"filter[tenant]=" + tenantA + "&filter[user_id]=" + userA + "-2&filter[service]=translations&filter[provider]=narrow&filter[status]=completed", true, func(j *jobs.Record) bool {
					return j.Tenant == tenantA && j.UserID == userA+"-2" && j.Service == "translations" && j.Provider == "narrow" && j.Status == jobs.StatusCompleted
				}},
			} {
				token := regular
				if tc.admin {
					token = admin
				}
				want := seeded.where(tc.keep)
				page := b.listJobs(t, token, tc.query+"&page[size]=100")
				require.Equal(t, want, page.ids(), "%s (admin %v)", tc.query, tc.admin)
				require.EqualValues(t, len(want), *page.Meta.Total, tc.query)
				require.NotEmpty(t, want, "the fixture must give %s something to find", tc.query)
				require.Less(t, len(want), len(seeded.where(func(*jobs.Record) bool { return true })), "the fixture must give %s something to exclude", tc.query)
			}
		})
	}
}

func TestListJobsInvalidQuery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.token(t, auth.ScopeCrossTenant)
	for _, tc := range []struct{ query, names string }{
		{"filter[service]=transcription", "filter[service]"},
		{"filter[service]=TRANSCRIPTIONS", "filter[service]"},
		{"filter[service]=", "filter[service]"},
		{"filter[status]=done", "filter[status]"},
		{"filter[status]=Completed", "filter[status]"},
		{"filter[status]=pending&filter[status]=failed", "filter[status]"},
		{"filter[provider]=", "filter[provider]"},
		{"filter[user_id]=", "filter[user_id]"},
		{"filter[application]=App", "filter[application]"},
		{"filter[application]=", "filter[application]"},
		{"filter[error_code]=", "filter[error_code]"},
		{"filter[error_code]=A&filter[error_code]=B", "filter[error_code]"},
		{"filter[created_from]=yesterday", "filter[created_from]"},
		{"filter[created_before]=2026-12-01", "filter[created_before]"},
		{"filter[custom_id]=", "filter[custom_id]"},
		{"filter[errors]=PROVIDER_ERROR", "filter[errors]"},
		{"filter[statuses]=failed", "filter[statuses]"},
		{"page[number]=0", "page[number]"},
		{"page[number]=-1", "page[number]"},
		{"page[number]=one", "page[number]"},
		{"page[number]=1.5", "page[number]"},
		{"page[size]=0", "page[size]"},
		{"page[size]=101", "page[size]"},
		{"page[size]=ten", "page[size]"},
		{"filter[user_id]=%FF", "filter[user_id]"},
		{"filter[provider]=a%00b", "filter[provider]"},
	} {
		r := b.do(t, http.MethodGet, "/v1/jobs?"+strings.ReplaceAll(tc.query, "[", "%5B"), token, nil)
		requireError(t, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR", tc.names)
	}
	// The accepted values of each enum.
	for _, v := range []string{"transcriptions", "translations", "video-analyses", "llm-tasks"} {
		b.listJobs(t, token, "filter[service]="+v)
	}
	for _, v := range []string{"pending", "processing", "completed", "failed"} {
		b.listJobs(t, token, "filter[status]="+v)
	}
	b.listJobs(t, token, "page[number]=1&page[size]=1")
	b.listJobs(t, token, "page[size]=100")
}

func TestListJobsMetaAndLinks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var want []string // newest first
	for i := range 45 {
		job := b.seed(t, jobs.Record{Service: "translations", Status: jobs.StatusCompleted, CreatedAt: fixedNow.Add(-time.Duration(i) * time.Second)})
		want = append(want, job.ID)
	}
	b.seed(t, jobs.Record{Service: "llm-tasks", Status: jobs.StatusCompleted, CreatedAt: fixedNow.Add(time.Hour)}) // filtered out
	token := b.token(t)
	filter := "filter[service]=translations"
	base := b.server.URL + "/v1/jobs"

	// link checks that a link is absolute, points at /v1/jobs and keeps
	// the filter, and returns its page number and size.
	link := func(t *testing.T, raw *string) (number, size string) {
		t.Helper()
		require.NotNil(t, raw)
		u, err := url.Parse(*raw)
		require.NoError(t, err)
		require.True(t, u.IsAbs(), "link %s must be absolute", *raw)
		require.Equal(t, base, u.Scheme+"://"+u.Host+u.Path)
		q := u.Query()
		require.Equal(t, "translations", q.Get("filter[service]"), "link %s must keep the filter", *raw)
		return q.Get("page[number]"), q.Get("page[size]")
	}
	requireLink := func(t *testing.T, raw *string, number string) {
		t.Helper()
		n, size := link(t, raw)
		require.Equal(t, number, n, "link %s", *raw)
		require.Equal(t, "20", size, "link %s", *raw)
	}

	// Page 1 (the default): prev is null.
	page := b.listJobs(t, token, filter)
	require.Equal(t, want[:20], page.ids())
	require.EqualValues(t, 45, *page.Meta.Total)
	require.EqualValues(t, 3, *page.Meta.PageCount)
	require.Equal(t, 1, *page.Meta.Page)
	require.Equal(t, 20, *page.Meta.PerPage)
	requireLink(t, page.Links["self"], "1")
	requireLink(t, page.Links["first"], "1")
	requireLink(t, page.Links["last"], "3")
	require.Contains(t, page.Links, "prev")
	require.Nil(t, page.Links["prev"], "prev is null on the first page")
	requireLink(t, page.Links["next"], "2")

	// A middle page has both.
	page = b.listJobs(t, token, filter+"&page[number]=2&page[size]=20")
	require.Equal(t, want[20:40], page.ids())
	require.Equal(t, 2, *page.Meta.Page)
	requireLink(t, page.Links["prev"], "1")
	requireLink(t, page.Links["next"], "3")

	// The last page: next is null.
	page = b.listJobs(t, token, filter+"&page[number]=3")
	require.Equal(t, want[40:], page.ids())
	require.EqualValues(t, 45, *page.Meta.Total)
	requireLink(t, page.Links["prev"], "2")
	require.Contains(t, page.Links, "next")
	require.Nil(t, page.Links["next"], "next is null on the last page")

	// Following next from the first page walks the whole listing.
	var walked []string
	next := b.server.URL + "/v1/jobs?" + filter + "&page[size]=7"
	for pages := 0; next != ""; pages++ {
		require.Less(t, pages, 10)
		r := b.do(t, http.MethodGet, strings.TrimPrefix(next, b.server.URL), token, nil)
		r.requireStatus(t, http.StatusOK)
		var p listPage
		require.NoError(t, json.Unmarshal(r.Body, &p))
		walked = append(walked, p.ids()...)
		next = ""
		if p.Links["next"] != nil {
			next = *p.Links["next"]
		}
	}
	require.Equal(t, want, walked)

	// A page past the last: 200, no jobs, the real total; prev leads back
	// to the last page.
	for _, number := range []string{"4", "1000", "9223372036854775807"} {
		page = b.listJobs(t, token, filter+"&page[number]="+number)
		require.Empty(t, page.ids(), "page %s", number)
		require.EqualValues(t, 45, *page.Meta.Total)
		require.EqualValues(t, 3, *page.Meta.PageCount)
		requireLink(t, page.Links["prev"], "3")
		require.Nil(t, page.Links["next"])
	}

	// Nothing to list: one (empty) page.
	page = b.listJobs(t, token, "filter[service]=video-analyses")
	require.Empty(t, page.ids())
	require.EqualValues(t, 0, *page.Meta.Total)
	require.EqualValues(t, 0, *page.Meta.PageCount)
	require.Nil(t, page.Links["prev"])
	require.Nil(t, page.Links["next"])
	require.NotNil(t, page.Links["first"])
	require.NotNil(t, page.Links["last"])
}

func TestListJobsRepresentation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seeded := seedListJobs(t, b)
	byID := map[string]*jobs.Record{}
	for _, j := range seeded.jobs {
		byID[j.ID] = j
	}
	jobTypes := map[string]string{}
	for _, r := range resources {
		jobTypes[r.id] = r.jobType
	}
	page := b.listJobs(t, b.token(t, auth.ScopeCrossTenant), "page[size]=100")
	require.Len(t, page.Data, 24)
	statuses := map[string]bool{}
	for _, item := range page.Data {
		job := byID[item.ID]
		require.NotNil(t, job, "unknown job %s", item.ID)
		statuses[string(job.Status)] = true
		require.Equal(t, jobTypes[string(job.Service)], item.Type, "type of a %s job", job.Service)
		a := item.Attributes
		// The listing form: no input, options or result.
		for _, absent := range []string{"input", "options", "result", "webhook"} {
			require.NotContains(t, a, absent, "job %s (%s)", job.ID, job.Status)
		}
		require.Equal(t, job.Tenant, a["tenant"])
		require.Equal(t, job.UserID, a["user_id"])
		require.Equal(t, string(job.Status), a["status"])
		require.Equal(t, job.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"), a["created_at"])
		require.IsType(t, []any{}, a["routing_history"])
		switch job.Status {
		case jobs.StatusPending:
			require.NotContains(t, a, "routing")
			require.NotContains(t, a, "provider")
		case jobs.StatusFailed:
			require.Equal(t, map[string]any{"code": job.ErrorCode, "message": "every candidate provider failed"}, a["error"])
			require.Equal(t, job.Provider, a["provider"])
			require.Contains(t, a, "completed_at")
		case jobs.StatusProcessing:
			require.EqualValues(t, 30, a["progress"])
			require.Contains(t, a, "routing")
		case jobs.StatusCompleted:
			require.Contains(t, a, "routing")
			require.NotContains(t, a, "error")
		}
		require.Equal(t, map[string]any{"region": testRegion, "worker_id": testNodeID}, item.Meta["system"])
	}
	require.Len(t, statuses, 4, "every status is represented")

	// The single-job form of the same job still carries them.
	var completed *jobs.Record
	for _, j := range seeded.jobs {
		if j.Status == jobs.StatusCompleted && j.Tenant == tenantA {
			completed = j
			break
		}
	}
	require.NotNil(t, completed)
	full := b.do(t, http.MethodGet, jobPath(string(completed.Service), completed.ID), b.readToken(t), nil)
	full.requireStatus(t, http.StatusOK)
	attrs := full.data(t)["attributes"].(map[string]any)
	require.Contains(t, attrs, "input")
	require.Contains(t, attrs, "result", string(full.Body))
}
