package store

import "time"

// jobDeltaV1 is a piece of a streamed llm-task answer (docs/api.md,
// Streamed answers).
type jobDeltaV1 struct {
	JobID     string    `gorm:"primaryKey;size:36"`
	Seq       int       `gorm:"primaryKey;autoIncrement:false"`
	CallID    string    `gorm:"size:200;not null"`
	Provider  string    `gorm:"size:64;not null"`
	Text      string    `gorm:"type:text;not null"`
	CreatedAt time.Time `gorm:"not null;index"`
}

func (jobDeltaV1) TableName() string { return "job_deltas" }

// migrationJobDeltas adds the pieces of streamed answers the event stream
// sends as llm-task.delta events.
var migrationJobDeltas = tableMigration("202612071007_job_deltas", []any{&jobDeltaV1{}})
