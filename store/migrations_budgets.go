package store

import (
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// budgetCounterV1 is what a budget has used in one period (docs/api.md,
// Budgets): settled usage and open reservations, in 1e-9 of the budget's
// currency or unit.
type budgetCounterV1 struct {
	Tenant      string    `gorm:"primaryKey;size:128"`
	BudgetID    string    `gorm:"primaryKey;size:64"`
	PeriodStart time.Time `gorm:"primaryKey"`
	Settled     int64     `gorm:"not null;default:0"`
	Reserved    int64     `gorm:"not null;default:0"`
	// Notified is the highest threshold (percent) notified this period.
	Notified  int `gorm:"not null;default:0"`
	UpdatedAt time.Time
}

func (budgetCounterV1) TableName() string { return "budget_counters" }

// budgetReservationV1 is a job's reservation against one budget.
type budgetReservationV1 struct {
	JobID       string    `gorm:"primaryKey;size:36"`
	BudgetID    string    `gorm:"primaryKey;size:64"`
	Tenant      string    `gorm:"size:128;not null"`
	PeriodStart time.Time `gorm:"not null"`
	Currency    string    `gorm:"size:3;not null;default:''"`
	Unit        string    `gorm:"size:16;not null;default:''"`
	Amount      int64     `gorm:"not null"`
	Settled     int64     `gorm:"not null;default:0"`
	State       string    `gorm:"size:16;not null"`
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (budgetReservationV1) TableName() string { return "budget_reservations" }

// migrationBudgets adds a tenant's budgets and notification URL, the
// per-period counters and the jobs' reservations.
var migrationBudgets = &gormigrate.Migration{
	ID: "202611300401_budgets",
	Migrate: func(tx *gorm.DB) error {
		if err := execAll(tx,
			"ALTER TABLE tenants ADD COLUMN budgets TEXT NOT NULL DEFAULT '[]'",
			"ALTER TABLE tenants ADD COLUMN notification_url TEXT NOT NULL DEFAULT ''",
		); err != nil {
			return err
		}
		return tx.Migrator().CreateTable(&budgetCounterV1{}, &budgetReservationV1{})
	},
	Rollback: func(tx *gorm.DB) error {
		if err := tx.Migrator().DropTable(&budgetReservationV1{}, &budgetCounterV1{}); err != nil {
			return err
		}
		return execAll(tx, "ALTER TABLE tenants DROP COLUMN budgets", "ALTER TABLE tenants DROP COLUMN notification_url")
	},
}

// budgetNotificationV1 is a budget.threshold event waiting for delivery
// to its tenant's notification URL (docs/api.md, Budgets).
type budgetNotificationV1 struct {
	ID            string    `gorm:"primaryKey;size:40"`
	Tenant        string    `gorm:"size:128;not null"`
	Budget        string    `gorm:"not null"`
	PeriodStart   time.Time `gorm:"not null"`
	Threshold     int       `gorm:"not null"`
	Spent         int64     `gorm:"not null"`
	State         string    `gorm:"size:16;not null;index:budget_notifications_due,priority:1"`
	Attempts      int       `gorm:"not null;default:0"`
	NextAttemptAt time.Time `gorm:"not null;index:budget_notifications_due,priority:2"`
	LastError     string    `gorm:"not null;default:''"`
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

func (budgetNotificationV1) TableName() string { return "budget_notifications" }

// migrationBudgetNotifications keeps crossed thresholds' events until
// they are delivered, so that none is lost with the process that crossed
// them.
var migrationBudgetNotifications = tableMigration("202612010101_budget_notifications", []any{&budgetNotificationV1{}})
