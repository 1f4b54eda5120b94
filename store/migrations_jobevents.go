package store

import "time"

// jobEventV1 is one lifecycle event of a job (docs/api.md, Following a
// job live).
type jobEventV1 struct {
	JobID     string    `gorm:"primaryKey;size:36"`
	Seq       int       `gorm:"primaryKey;autoIncrement:false"`
	Kind      string    `gorm:"size:16;not null"`
	Snapshot  string    `gorm:"type:text;not null"`
	CreatedAt time.Time `gorm:"not null"`
}

func (jobEventV1) TableName() string { return "job_events" }

// migrationJobEvents adds the jobs' lifecycle events the event stream
// replays.
var migrationJobEvents = tableMigration("202612010501_job_events", []any{&jobEventV1{}})
