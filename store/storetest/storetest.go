// Package storetest gives tests a migrated store on a fresh schema: a new
// PostgreSQL schema per test (TEST_DATABASE_URL, by default the local
// server's "test" database) or a new SQLite file.
package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for schema set-up

	"github.com/ai-job-gateway/gateway/internal/faultnet"
	"github.com/ai-job-gateway/gateway/store"
	"github.com/ai-job-gateway/gateway/store/benchdb"
)

// DefaultPostgresURL is the database tests use unless TEST_DATABASE_URL is set.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// PostgresURL is the database tests run against.
func PostgresURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultPostgresURL
}

// FreshPostgresURL creates an empty schema, dropped when the test ends, and
// returns a URL whose connections use it.
func FreshPostgresURL(t testing.TB) string {
	t.Helper()
	schema := "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20]
	u, drop, err := benchdb.NewSchema(context.Background(), PostgresURL(), schema)
	if err != nil {
		t.Fatalf("storetest: %v (run the tests with make test, which starts a throwaway PostgreSQL when none answers at TEST_DATABASE_URL, or scripts/with-postgres go test ...)", err)
	}
	t.Cleanup(drop)
	return u
}

// Postgres opens a migrated store on a fresh PostgreSQL schema.
func Postgres(t testing.TB) *store.Store {
	t.Helper()
	return open(t, FreshPostgresURL(t))
}

// SeededPostgres opens a migrated store on a fresh PostgreSQL schema
// holding BENCH_JOBS seeded jobs (benchdb.Jobs, benchdb.SeedJobs), for the
// benchmarks of reads at scale, and returns it with the number of jobs.
func SeededPostgres(b testing.TB) (*store.Store, int) {
	b.Helper()
	n, err := benchdb.Jobs()
	if err != nil {
		b.Fatal(err)
	}
	databaseURL := FreshPostgresURL(b)
	s := open(b, databaseURL)
	start := time.Now()
	if err := benchdb.SeedJobs(context.Background(), databaseURL, n); err != nil {
		b.Fatal(err)
	}
	// Printed, not logged: a benchmark's log shows only with -v.
	fmt.Printf("seeded %d jobs in %s\n", n, time.Since(start).Round(100*time.Millisecond))
	return s, n
}

// SQLite opens a migrated store on a new SQLite file.
func SQLite(t testing.TB) *store.Store {
	t.Helper()
	return open(t, "sqlite:"+filepath.Join(t.TempDir(), "gateway.db"))
}

// Each runs fn once against PostgreSQL and once against SQLite, as subtests.
func Each(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	t.Helper()
	EachDB(t, func(t *testing.T, s *store.Store, _ *sql.DB) { fn(t, s) })
}

// EachDB is Each with a second, database/sql connection pool to the same
// database, for statements the store has no method for. Statements on db
// use the database's own SQL (PostgreSQL's $1, SQLite's ?).
func EachDB(t *testing.T, fn func(t *testing.T, s *store.Store, db *sql.DB)) {
	t.Helper()
	for name, urls := range map[string]func(testing.TB) (string, string, string){
		"postgres": func(t testing.TB) (string, string, string) {
			u := FreshPostgresURL(t)
			return u, "pgx", u
		},
		"sqlite": func(t testing.TB) (string, string, string) {
			path := filepath.Join(t.TempDir(), "gateway.db")
			return "sqlite:" + path, "sqlite", path + "?_pragma=busy_timeout(5000)"
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			databaseURL, driver, dsn := urls(t)
			s := open(t, databaseURL)
			db, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatalf("storetest: %v", err)
			}
			t.Cleanup(func() { _ = db.Close() })
			fn(t, s, db)
		})
	}
}

// Open opens a migrated store on databaseURL, closed when the test ends:
// on a database another store uses, another process.
func Open(t testing.TB, databaseURL string) *store.Store {
	t.Helper()
	return open(t, databaseURL)
}

// PostgresDB is a database/sql connection pool to the PostgreSQL database
// at databaseURL, closed when the test ends, for statements the store has
// no method for.
func PostgresDB(t testing.TB, databaseURL string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", databaseURL)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func open(t testing.TB, databaseURL string) *store.Store {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, databaseURL)
	if err != nil {
		t.Fatalf("storetest: open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return s
}

// FreshPostgresURLThroughLink is FreshPostgresURL reached through a TCP
// link the test can cut (faultnet.Link), with a 2 s connect timeout, for
// database outage tests.
func FreshPostgresURLThroughLink(t testing.TB) (*faultnet.Link, string) {
	t.Helper()
	return PostgresURLThroughLink(t, FreshPostgresURL(t))
}

// PostgresURLThroughLink is databaseURL reached through a TCP link the
// test can cut or hold, with a 2 s connect timeout.
func PostgresURLThroughLink(t testing.TB, databaseURL string) (*faultnet.Link, string) {
	t.Helper()
	direct, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	link, err := faultnet.NewLink(direct.Host)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(link.Close)
	viaLink := *direct
	viaLink.Host = link.Addr()
	q := viaLink.Query()
	q.Set("connect_timeout", "2")
	viaLink.RawQuery = q.Encode()
	return link, viaLink.String()
}
