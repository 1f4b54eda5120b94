package store

import (
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"
)

// housekeepingRoundV1 is when a round of periodic work last started.
type housekeepingRoundV1 struct {
	Name      string    `gorm:"primaryKey;size:128"`
	StartedAt time.Time `gorm:"not null"`
}

func (housekeepingRoundV1) TableName() string { return "housekeeping_rounds" }

// migrationHousekeepingRounds adds the record of which round of each
// cluster-wide sweep was taken (ClaimRound).
var migrationHousekeepingRounds = &gormigrate.Migration{
	ID: "202611270001_housekeeping_rounds",
	Migrate: func(tx *gorm.DB) error {
		return tx.Migrator().CreateTable(&housekeepingRoundV1{})
	},
	Rollback: func(tx *gorm.DB) error {
		return tx.Migrator().DropTable(&housekeepingRoundV1{})
	},
}
