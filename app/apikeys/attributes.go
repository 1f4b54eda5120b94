package apikeys

import (
	"time"

	"github.com/ai-job-gateway/gateway/store"
)

// Attributes is a key as the API shows it (docs/api.md, API keys), and as
// the console and `gateway keys -o json` read and write it; Secret only in
// the answers of create and rotate.
type Attributes struct {
	Name                    string          `json:"name"`
	Tenant                  string          `json:"tenant"`
	Scopes                  []string        `json:"scopes"`
	Application             *string         `json:"application"`
	CreatedBy               string          `json:"created_by"`
	CreatedAt               time.Time       `json:"created_at"`
	ExpiresAt               *time.Time      `json:"expires_at"`
	LastUsedAt              *time.Time      `json:"last_used_at"`
	PreviousSecretExpiresAt *time.Time      `json:"previous_secret_expires_at"`
	Limits                  store.KeyLimits `json:"limits"`
	Secret                  string          `json:"secret,omitempty"`
}

// View is k's attributes at now, times in UTC, with secret ("" but when
// the key was just created or rotated).
func View(k store.APIKey, secret string, now time.Time) Attributes {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	return Attributes{Name: k.Name, Tenant: k.Tenant, Scopes: k.Scopes, Application: k.Application,
		CreatedBy: k.CreatedBy, CreatedAt: k.CreatedAt.UTC(), ExpiresAt: utc(k.ExpiresAt), LastUsedAt: utc(k.LastUsedAt),
		PreviousSecretExpiresAt: k.PreviousSecretUntil(now), Limits: k.Limits, Secret: secret}
}
