// Package sqlitedialect is GORM's dialect of SQLite over modernc.org/sqlite,
// the pure-Go engine the embedded Temporal server registers too: one engine
// in the binary, no cgo, and no fork of a driver (docs/architecture.md,
// Store).
//
// It covers what the store asks of GORM: queries with RETURNING, upserts,
// savepoints, the duplicate-key and foreign-key errors, and the migrator's
// CreateTable, DropTable and HasTable that the migrations use. Columns are
// declared with the types SQLite databases made by earlier releases have,
// so modernc reads datetime columns back as time.Time as before.
package sqlitedialect

import (
	"errors"
	"strconv"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/migrator"
	"gorm.io/gorm/schema"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// DriverName is the database/sql driver modernc.org/sqlite registers.
const DriverName = "sqlite"

// Dialector opens GORM on Conn, a pool over a database/sql handle of
// DriverName.
type Dialector struct {
	Conn gorm.ConnPool
}

var _ gorm.Dialector = Dialector{}
var _ gorm.ErrorTranslator = Dialector{}
var _ gorm.SavePointerDialectorInterface = Dialector{}

// Name is the dialect's name, as GORM and the store know it.
func (Dialector) Name() string { return "sqlite" }

// Initialize registers GORM's callbacks with the clauses SQLite 3.35 and
// later (modernc's) understands.
func (d Dialector) Initialize(db *gorm.DB) error {
	if d.Conn == nil {
		return errors.New("sqlitedialect: no connection pool")
	}
	db.ConnPool = d.Conn
	callbacks.RegisterDefaultCallbacks(db, &callbacks.Config{
		CreateClauses:        []string{"INSERT", "VALUES", "ON CONFLICT", "RETURNING"},
		UpdateClauses:        []string{"UPDATE", "SET", "FROM", "WHERE", "RETURNING"},
		DeleteClauses:        []string{"DELETE", "FROM", "WHERE", "RETURNING"},
		LastInsertIDReversed: true,
	})
	db.ClauseBuilders["LIMIT"] = buildLimit
	db.ClauseBuilders["FOR"] = buildLocking
	return nil
}

// buildLimit writes LIMIT and OFFSET; SQLite needs a LIMIT (-1: none)
// before an OFFSET.
func buildLimit(c clause.Clause, builder clause.Builder) {
	limit, ok := c.Expression.(clause.Limit)
	if !ok {
		c.Build(builder)
		return
	}
	n := -1
	if limit.Limit != nil && *limit.Limit >= 0 {
		n = *limit.Limit
	}
	if n >= 0 || limit.Offset > 0 {
		builder.WriteString("LIMIT " + strconv.Itoa(n))
	}
	if limit.Offset > 0 {
		builder.WriteString(" OFFSET " + strconv.Itoa(limit.Offset))
	}
}

// buildLocking leaves out FOR UPDATE and its kin: SQLite has no row locks,
// and its one writer at a time is what they ask for.
func buildLocking(c clause.Clause, builder clause.Builder) {
	if _, ok := c.Expression.(clause.Locking); ok {
		return
	}
	c.Build(builder)
}

// DefaultValueOf is the value GORM inserts for a field left to the database.
func (Dialector) DefaultValueOf(field *schema.Field) clause.Expression {
	if field.AutoIncrement {
		return clause.Expr{SQL: "NULL"}
	}
	return clause.Expr{SQL: "DEFAULT"}
}

// Migrator is GORM's generic migrator, with indexes created after their
// table and SQLite's catalog for HasTable.
func (d Dialector) Migrator(db *gorm.DB) gorm.Migrator {
	return sqliteMigrator{migrator.Migrator{Config: migrator.Config{
		DB:                          db,
		Dialector:                   d,
		CreateIndexAfterCreateTable: true,
	}}}
}

// BindVarTo writes a placeholder.
func (Dialector) BindVarTo(writer clause.Writer, _ *gorm.Statement, _ any) {
	writer.WriteByte('?')
}

// QuoteTo quotes an identifier, each part of a dotted one on its own.
func (Dialector) QuoteTo(writer clause.Writer, identifier string) {
	for i, part := range splitDotted(identifier) {
		if i > 0 {
			writer.WriteByte('.')
		}
		writer.WriteByte('`')
		for _, c := range []byte(part) {
			if c == '`' {
				writer.WriteByte('`')
			}
			writer.WriteByte(c)
		}
		writer.WriteByte('`')
	}
}

// splitDotted splits table.column into its parts.
func splitDotted(identifier string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(identifier); i++ {
		if identifier[i] == '.' {
			parts = append(parts, identifier[start:i])
			start = i + 1
		}
	}
	return append(parts, identifier[start:])
}

// Explain renders a statement with its values, for logs.
func (Dialector) Explain(sql string, vars ...any) string {
	return logger.ExplainSQL(sql, nil, `"`, vars...)
}

// DataTypeOf is a field's column type.
func (Dialector) DataTypeOf(field *schema.Field) string {
	switch field.DataType {
	case schema.Bool:
		return "numeric"
	case schema.Int, schema.Uint:
		if field.AutoIncrement {
			return "integer PRIMARY KEY AUTOINCREMENT"
		}
		return "integer"
	case schema.Float:
		return "real"
	case schema.String:
		return "text"
	case schema.Time:
		if declared, ok := field.TagSettings["TYPE"]; ok {
			return declared
		}
		return "datetime"
	case schema.Bytes:
		return "blob"
	}
	return string(field.DataType)
}

// SavePoint starts a savepoint.
func (Dialector) SavePoint(tx *gorm.DB, name string) error {
	return tx.Exec("SAVEPOINT " + name).Error
}

// RollbackTo rolls back to a savepoint.
func (Dialector) RollbackTo(tx *gorm.DB, name string) error {
	return tx.Exec("ROLLBACK TO SAVEPOINT " + name).Error
}

// Translate turns SQLite's constraint errors into GORM's, so the store
// tells a duplicate from other failures the same way on either database.
func (Dialector) Translate(err error) error {
	var sqliteErr *sqlite.Error
	if !errors.As(err, &sqliteErr) {
		return err
	}
	switch sqliteErr.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return gorm.ErrDuplicatedKey
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return gorm.ErrForeignKeyViolated
	}
	return err
}

type sqliteMigrator struct {
	migrator.Migrator
}

// HasTable reads SQLite's catalog (the generic one asks information_schema).
func (m sqliteMigrator) HasTable(value any) bool {
	var count int
	_ = m.RunWithValue(value, func(stmt *gorm.Statement) error {
		return m.DB.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", stmt.Table).Row().Scan(&count)
	})
	return count > 0
}

// CurrentDatabase is SQLite's name for the database a connection opened.
func (m sqliteMigrator) CurrentDatabase() string {
	return "main"
}
