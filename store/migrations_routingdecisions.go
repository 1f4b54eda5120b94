package store

import (
	"time"
)

// routingDecisionV1 is what one routing decision (a job's attempt) took
// that a retry of it must not take again.
type routingDecisionV1 struct {
	JobID      string    `gorm:"primaryKey;size:36"`
	Attempt    int       `gorm:"primaryKey;autoIncrement:false"`
	Turn       *int64    // the round-robin turn it took
	ProviderID string    `gorm:"size:128;not null;default:''"` // the provider it reserved a rate with
	ExpiresAt  time.Time `gorm:"not null"`
}

func (routingDecisionV1) TableName() string { return "routing_decisions" }

// migrationRoutingDecisions adds the record of routing decisions that
// makes a retried decision reserve its rate and take its round-robin turn
// once; expired records are deleted by the workers' housekeeping.
var migrationRoutingDecisions = tableMigration("202611240001_routing_decisions", []any{&routingDecisionV1{}},
	"CREATE INDEX idx_routing_decisions_expiry ON routing_decisions (expires_at)")
