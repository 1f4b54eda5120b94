// Package sqlite stands in for github.com/glebarez/go-sqlite (see the
// replace directive in the gateway's go.mod).
//
// glebarez/sqlite, the pure-Go GORM dialector, imports glebarez/go-sqlite,
// which registers the database/sql driver "sqlite". The embedded Temporal
// server imports modernc.org/sqlite, which registers the same name, and two
// registrations panic at start-up. glebarez/go-sqlite is a thin wrapper over
// modernc.org/sqlite, so this shim lets the dialector use modernc's driver
// directly: one SQLite engine, one registration.
package sqlite

import modernc "modernc.org/sqlite"

// Error is the driver's error type, which the dialector translates into
// GORM's ErrDuplicatedKey and friends.
type Error = modernc.Error
