package store

import (
	"time"
)

// housekeepingRoundV1 is when a round of periodic work last started.
type housekeepingRoundV1 struct {
	Name      string    `gorm:"primaryKey;size:128"`
	StartedAt time.Time `gorm:"not null"`
}

func (housekeepingRoundV1) TableName() string { return "housekeeping_rounds" }

// migrationHousekeepingRounds adds the record of which round of each
// cluster-wide sweep was taken (ClaimRound).
var migrationHousekeepingRounds = tableMigration("202611270001_housekeeping_rounds", []any{&housekeepingRoundV1{}})
