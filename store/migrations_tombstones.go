package store

import (
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// jobTombstoneV1 is what is kept of a deleted job (docs/api.md, Deleting a
// job).
type jobTombstoneV1 struct {
	ID           string    `gorm:"primaryKey;size:36"`
	Tenant       string    `gorm:"size:128;not null"`
	Service      string    `gorm:"size:64;not null"`
	CreatedAt    time.Time `gorm:"not null"`
	CompletedAt  *time.Time
	DeletedAt    time.Time `gorm:"not null"`
	DeletedBy    string    `gorm:"size:255;not null;default:''"`
	VendorCopies string    `gorm:"type:text;not null;default:''"`
	ErasedAt     *time.Time
}

func (jobTombstoneV1) TableName() string { return "job_tombstones" }

// migrationJobTombstones adds deleted jobs' tombstones, an index to find
// the erasures still running, and a trigger that keeps a deleted job from
// coming back: a late projection write of its workflow (an insert, as
// the row is gone) is dropped.
var migrationJobTombstones = &gormigrate.Migration{
	ID: "202611290001_job_tombstones",
	Migrate: func(tx *gorm.DB) error {
		if err := tx.Migrator().CreateTable(&jobTombstoneV1{}); err != nil {
			return err
		}
		trigger := jobsStayDeletedSQLite
		if tx.Dialector.Name() == "postgres" {
			trigger = jobsStayDeletedPostgres
		}
		return execAll(tx, append([]string{
			"CREATE INDEX idx_job_tombstones_unerased ON job_tombstones (deleted_at) WHERE erased_at IS NULL",
		}, trigger...)...)
	},
	Rollback: func(tx *gorm.DB) error {
		stmts := []string{"DROP TRIGGER jobs_stay_deleted"}
		if tx.Dialector.Name() == "postgres" {
			stmts = []string{"DROP TRIGGER jobs_stay_deleted_after ON jobs", "DROP FUNCTION jobs_stay_deleted_after()",
				"DROP TRIGGER jobs_stay_deleted ON jobs", "DROP FUNCTION jobs_stay_deleted()"}
		}
		if err := execAll(tx, stmts...); err != nil {
			return err
		}
		return tx.Migrator().DropTable(&jobTombstoneV1{})
	},
}

var jobsStayDeletedSQLite = []string{`CREATE TRIGGER jobs_stay_deleted BEFORE INSERT ON jobs
	WHEN EXISTS (SELECT 1 FROM job_tombstones WHERE id = NEW.id)
	BEGIN SELECT RAISE(IGNORE); END`}

var jobsStayDeletedPostgres = []string{
	`CREATE FUNCTION jobs_stay_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM job_tombstones WHERE id = NEW.id) THEN
		RETURN NULL;
	END IF;
	RETURN NEW;
END $$`,
	`CREATE TRIGGER jobs_stay_deleted BEFORE INSERT ON jobs
	FOR EACH ROW EXECUTE FUNCTION jobs_stay_deleted()`,
	// An upsert whose BEFORE trigger ran while DeleteJob held the row
	// inserts once the row is gone, without running it again: the AFTER
	// trigger, whose query sees the tombstone committed by then, takes
	// the row away again.
	`CREATE FUNCTION jobs_stay_deleted_after() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM job_tombstones WHERE id = NEW.id) THEN
		DELETE FROM jobs WHERE id = NEW.id;
	END IF;
	RETURN NULL;
END $$`,
	`CREATE TRIGGER jobs_stay_deleted_after AFTER INSERT ON jobs
	FOR EACH ROW EXECUTE FUNCTION jobs_stay_deleted_after()`,
}
