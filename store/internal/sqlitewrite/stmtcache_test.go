package sqlitewrite

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

// cached reports whether the pool keeps text prepared.
func (p *Pool) cached(text string) bool {
	p.stmts.mu.Lock()
	defer p.stmts.mu.Unlock()
	_, ok := p.stmts.byText[text]
	return ok
}

// hits is how many statements ran prepared.
func (p *Pool) hits() int64 {
	p.stmts.mu.Lock()
	defer p.stmts.mu.Unlock()
	return p.stmts.hits
}

func (p *Pool) cachedCount() int {
	p.stmts.mu.Lock()
	defer p.stmts.mu.Unlock()
	return p.stmts.order.Len()
}

func TestStatementsOfTransactionsArePreparedByTheNextOne(t *testing.T) {
	db, pool, _ := openDB(t)
	require.NoError(t, db.Exec("CREATE TABLE jobs (id INTEGER PRIMARY KEY, status TEXT NOT NULL)").Error)
	const insert = "INSERT INTO jobs (id, status) VALUES (?, ?)"

	for id := 1; id <= 3; id++ {
		before := pool.hits()
		require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
			return tx.Exec(insert, id, "pending").Error
		}))
		require.Equal(t, id >= 2, pool.hits() > before, "transaction %d ran the insert prepared", id)
		// The first transaction ran it unprepared; the second's BeginTx
		// prepared it.
		require.Equal(t, id >= 2, pool.cached(insert), "after transaction %d", id)
	}
	var n int64
	require.NoError(t, db.Raw("SELECT COUNT(*) FROM jobs WHERE status = ?", "pending").Scan(&n).Error)
	require.EqualValues(t, 3, n, "every insert, prepared or not, landed")
	require.True(t, pool.cached("SELECT COUNT(*) FROM jobs WHERE status = ?"), "a statement outside a transaction is prepared at once")

	// A rolled-back transaction's prepared statement left nothing behind.
	require.Error(t, db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec(insert, 4, "pending").Error; err != nil {
			return err
		}
		return fmt.Errorf("roll back")
	}))
	require.NoError(t, db.Raw("SELECT COUNT(*) FROM jobs WHERE status = ?", "pending").Scan(&n).Error)
	require.EqualValues(t, 3, n)
}

func TestPreparedStatementsFollowSchemaChanges(t *testing.T) {
	db, _, _ := openDB(t)
	require.NoError(t, db.Exec("CREATE TABLE jobs (id INTEGER PRIMARY KEY)").Error)
	require.NoError(t, db.Exec("INSERT INTO jobs (id) VALUES (1)").Error)
	const all = "SELECT * FROM jobs"
	columns := func() []string {
		rows, err := db.Raw(all).Rows()
		require.NoError(t, err)
		defer rows.Close()
		cols, err := rows.Columns()
		require.NoError(t, err)
		return cols
	}
	require.Equal(t, []string{"id"}, columns())
	// A migration adds a column: the statement prepared before sees it.
	require.NoError(t, db.Exec("ALTER TABLE jobs ADD COLUMN status TEXT NOT NULL DEFAULT 'pending'").Error)
	require.Equal(t, []string{"id", "status"}, columns())
}

func TestStatementCacheIsBounded(t *testing.T) {
	db, pool, _ := openDB(t)
	require.NoError(t, db.Exec("CREATE TABLE jobs (id INTEGER PRIMARY KEY)").Error)
	// Statements whose text varies, as IN lists do.
	for n := 1; n <= stmtCacheSize+40; n++ {
		q := "SELECT COUNT(*) FROM jobs WHERE id IN (?" + strings.Repeat(", ?", n-1) + ")"
		args := make([]any, n)
		for i := range args {
			args[i] = i
		}
		require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
			var count int64
			return tx.Raw(q, args...).Scan(&count).Error
		}))
	}
	require.Equal(t, stmtCacheSize, pool.cachedCount())
	// The least recently used went first: the first texts are gone, the
	// statements still run.
	require.False(t, pool.cached("SELECT COUNT(*) FROM jobs WHERE id IN (?)"))
	var count int64
	require.NoError(t, db.Raw("SELECT COUNT(*) FROM jobs WHERE id IN (?)", 1).Scan(&count).Error)
}

func TestStatementSQLiteRefusesFailsAsUnprepared(t *testing.T) {
	db, pool, _ := openDB(t)
	for range 2 {
		err := db.Transaction(func(tx *gorm.DB) error {
			return tx.Exec("INSERT INTO missing (id) VALUES (1)").Error
		})
		require.ErrorContains(t, err, "no such table")
	}
	require.False(t, pool.cached("INSERT INTO missing (id) VALUES (1)"))
	require.ErrorContains(t, db.Exec("INSERT INTO missing (id) VALUES (1)").Error, "no such table")
}
