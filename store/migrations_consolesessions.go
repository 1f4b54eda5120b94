package store

import "time"

// consoleSessionV1 is a person's session in the console (docs/console.md,
// Sessions): the SHA-256 of the cookie's token (hex), never the token, and the
// API key's secret sealed with AES-GCM under the console's key.
type consoleSessionV1 struct {
	ID         string    `gorm:"primaryKey;size:64"` // hex
	Tenant     string    `gorm:"size:63;not null"`
	Credential []byte    `gorm:"not null"`
	CSRFToken  string    `gorm:"size:64;not null"`
	CreatedAt  time.Time `gorm:"not null"`
	ExpiresAt  time.Time `gorm:"not null;index"`
}

func (consoleSessionV1) TableName() string { return "console_sessions" }

// migrationConsoleSessions adds the console's sessions, swept once they
// expire.
var migrationConsoleSessions = tableMigration("202612071009_console_sessions", []any{&consoleSessionV1{}})
