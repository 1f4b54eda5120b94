package store

import "time"

// openAIObjectV1 is a tenant's file or batch of OpenAI's Files and Batch
// APIs (docs/openai.md, Files and batches).
type openAIObjectV1 struct {
	Tenant    string    `gorm:"primaryKey;size:128"`
	Kind      string    `gorm:"primaryKey;size:16"`
	ID        string    `gorm:"primaryKey;size:64"`
	CreatedAt time.Time `gorm:"not null"`
	Document  string    `gorm:"type:text;not null"` // JSON
}

func (openAIObjectV1) TableName() string { return "openai_objects" }

// migrationOpenAIObjects adds the OpenAI files' and batches' metadata,
// listed per tenant and kind newest first.
var migrationOpenAIObjects = tableMigration("202612071008_openai_objects", []any{&openAIObjectV1{}},
	"CREATE INDEX idx_openai_objects_listing ON openai_objects (tenant, kind, created_at DESC, id DESC)")
