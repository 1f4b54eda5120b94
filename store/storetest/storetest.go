// Package storetest gives tests a migrated store on a fresh schema: a new
// PostgreSQL schema per test (TEST_DATABASE_URL, by default the local
// server's "test" database) or a new SQLite file.
package storetest

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for schema set-up

	"github.com/ai-job-gateway/gateway/store"
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
	base := PostgresURL()
	schema := "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20]
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("storetest: create schema (is PostgreSQL running at %s?): %v", base, err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer admin.Close()
		_, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Postgres opens a migrated store on a fresh PostgreSQL schema.
func Postgres(t testing.TB) *store.Store {
	t.Helper()
	return open(t, FreshPostgresURL(t))
}

// SQLite opens a migrated store on a new SQLite file.
func SQLite(t testing.TB) *store.Store {
	t.Helper()
	return open(t, "sqlite:"+filepath.Join(t.TempDir(), "gateway.db"))
}

// Each runs fn once against PostgreSQL and once against SQLite, as subtests.
func Each(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	t.Helper()
	for name, open := range map[string]func(testing.TB) *store.Store{"postgres": Postgres, "sqlite": SQLite} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open(t))
		})
	}
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
