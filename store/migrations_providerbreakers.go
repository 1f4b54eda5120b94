package store

import "time"

// providerBreakerV1 is a provider's circuit breaker for one service
// (docs/providers.md, Circuit breakers); its recent outcomes are counted
// in a few buckets in the row (window, JSON), not one row per call.
type providerBreakerV1 struct {
	ProviderID          string `gorm:"primaryKey;size:128"`
	Service             string `gorm:"primaryKey;size:32"`
	State               string `gorm:"size:16;not null;default:'closed'"`
	Since               *time.Time
	OpenUntil           *time.Time
	Opens               int `gorm:"not null;default:0"`
	ConsecutiveFailures int `gorm:"not null;default:0"`
	Probes              int `gorm:"not null;default:0"`
	ProbeSuccesses      int `gorm:"not null;default:0"`
	ProbesAt            *time.Time
	Window              string `gorm:"type:text;not null;default:''"`
	Forced              string `gorm:"size:16;not null;default:''"` // '' automatic, else open or closed
	ForcedBy            string `gorm:"size:255;not null;default:''"`
	ForcedAt            *time.Time
	UpdatedAt           time.Time
}

func (providerBreakerV1) TableName() string { return "provider_breakers" }

// migrationProviderBreakers adds the circuit breakers every worker shares.
var migrationProviderBreakers = tableMigration("202611300301_provider_breakers", []any{&providerBreakerV1{}})
