package sqlitedialect_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ai-job-gateway/gateway/store/internal/sqlitedialect"
)

type parent struct {
	ID        string `gorm:"primaryKey"`
	Name      string `gorm:"uniqueIndex"`
	Active    bool
	CreatedAt time.Time
}

type child struct {
	ID       int64  `gorm:"primaryKey;autoIncrement"`
	ParentID string `gorm:"not null"`
	Parent   parent `gorm:"constraint:OnDelete:CASCADE"`
}

func open(t *testing.T) *gorm.DB {
	t.Helper()
	sqlDB, err := sql.Open(sqlitedialect.DriverName, filepath.Join(t.TempDir(), "t.db")+"?_pragma=foreign_keys(1)")
	require.NoError(t, err)
	sqlDB.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = sqlDB.Close() })
	db, err := gorm.Open(sqlitedialect.Dialector{Conn: sqlDB}, &gorm.Config{TranslateError: true})
	require.NoError(t, err)
	return db
}

// TestDialector: what the store asks of GORM on SQLite works: the
// migrator's tables and indexes, constraint errors as GORM's, times read
// back as times, RETURNING, LIMIT with OFFSET, and no FOR UPDATE.
func TestDialector(t *testing.T) {
	db := open(t)
	require.False(t, db.Migrator().HasTable(&parent{}))
	require.NoError(t, db.Migrator().CreateTable(&parent{}, &child{}))
	require.True(t, db.Migrator().HasTable(&parent{}))
	require.True(t, db.Migrator().HasTable("children"))

	var ddl string
	require.NoError(t, db.Raw("SELECT sql FROM sqlite_master WHERE name = 'parents'").Scan(&ddl).Error)
	require.Contains(t, ddl, "`created_at` datetime", "the column types of databases made by earlier releases")
	require.Contains(t, ddl, "`active` numeric")

	at := time.Date(2026, 12, 7, 5, 0, 0, 123000000, time.UTC)
	require.NoError(t, db.Create(&parent{ID: "a", Name: "one", Active: true, CreatedAt: at}).Error)
	require.ErrorIs(t, db.Create(&parent{ID: "a", Name: "two"}).Error, gorm.ErrDuplicatedKey, "primary key")
	require.ErrorIs(t, db.Create(&parent{ID: "b", Name: "one"}).Error, gorm.ErrDuplicatedKey, "unique index")
	require.ErrorIs(t, db.Create(&child{ParentID: "nobody"}).Error, gorm.ErrForeignKeyViolated)

	var got parent
	require.NoError(t, db.Clauses(clause.Locking{Strength: "UPDATE"}).First(&got, "id = ?", "a").Error)
	require.True(t, got.CreatedAt.Equal(at), "%v", got.CreatedAt)
	require.True(t, got.Active)

	c := child{ParentID: "a"}
	require.NoError(t, db.Create(&c).Error)
	require.NotZero(t, c.ID, "the id comes back")

	var renamed []parent
	require.NoError(t, db.Model(&parent{}).Clauses(clause.Returning{}).Where("id = ?", "a").
		Update("name", "uno").Scan(&renamed).Error)
	require.Len(t, renamed, 1)
	require.Equal(t, "uno", renamed[0].Name)

	for _, id := range []string{"c", "d", "e"} {
		require.NoError(t, db.Create(&parent{ID: id, Name: id}).Error)
	}
	var ids []string
	require.NoError(t, db.Model(&parent{}).Order("id").Offset(2).Pluck("id", &ids).Error)
	require.Equal(t, []string{"d", "e"}, ids, "an OFFSET without a LIMIT")
	require.NoError(t, db.Model(&parent{}).Order("id").Limit(1).Offset(1).Pluck("id", &ids).Error)
	require.Equal(t, []string{"c"}, ids)

	require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
		require.NoError(t, tx.Create(&parent{ID: "f", Name: "f"}).Error)
		require.Error(t, tx.Transaction(func(inner *gorm.DB) error {
			require.NoError(t, inner.Create(&parent{ID: "g", Name: "g"}).Error)
			return gorm.ErrInvalidData
		}), "the savepoint is rolled back to")
		return nil
	}))
	var count int64
	require.NoError(t, db.Model(&parent{}).Where("id IN ?", []string{"f", "g"}).Count(&count).Error)
	require.Equal(t, int64(1), count)

	require.NoError(t, db.Migrator().DropTable(&child{}, &parent{}))
	require.False(t, db.Migrator().HasTable(&parent{}))
}
