package store

import (
	"time"
)

// providerCallbackV1 is what a vendor posted back about one attempt of a
// job (docs/providers.md, Vendor callbacks).
type providerCallbackV1 struct {
	JobID      string    `gorm:"primaryKey;size:36"`
	Attempt    int       `gorm:"primaryKey;autoIncrement:false"`
	Body       []byte    `gorm:"not null"`
	ReceivedAt time.Time `gorm:"not null"`
}

func (providerCallbackV1) TableName() string { return "provider_callbacks" }

// migrationProviderCallbacks adds the vendor callbacks waiting for their
// job's workflow to read them.
var migrationProviderCallbacks = tableMigration("202611260001_provider_callbacks", []any{&providerCallbackV1{}})
