// Package benchdb prepares PostgreSQL databases for benchmarks: a fresh
// schema (NewSchema, which storetest's tests use too) and a jobs table
// seeded with a million jobs of realistic skew (SeedJobs), for
// cmd/gatewaybench's reads phase and the store's list benchmark
// (docs/benchmarks.md).
package benchdb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// NewSchema creates schema in the PostgreSQL database at base and returns
// a URL whose connections use it, and drop, which removes the schema and
// everything in it.
func NewSchema(ctx context.Context, base, schema string) (schemaURL string, drop func(), err error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, err
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return "", nil, err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, fmt.Errorf("create schema (is PostgreSQL running at %s?): %w", base, err)
	}
	drop = func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer admin.Close()
		_, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE")
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}
