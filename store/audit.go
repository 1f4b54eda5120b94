package store

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
)

// AuditEvent records one administrative write (docs/api.md, Audit log):
// who made it, on what, and what it changed. It is written in the
// transaction of the write it records; nothing changes or deletes it but
// retention.
type AuditEvent struct {
	// ID is a UUIDv7: events sort by it as by time.
	ID string `gorm:"primaryKey"`
	At time.Time
	// Tenant is the tenant whose resource changed; "" for what is the
	// whole gateway's (providers, services, gateway-wide policies).
	Tenant string
	// Actor is the caller: a token's sub, key:<id> for an API key, or
	// cli:<user> for the command line.
	Actor string
	// Action is "<resource>.<verb>", e.g. "policy.update".
	Action string
	// Target is "<resource type>/<id>", e.g. "policy/0195…".
	Target string
	// Changes are the members the write changed, before and after; a
	// member that did not exist is null.
	Changes   map[string]AuditChange `gorm:"serializer:json"`
	RequestID string
}

func (AuditEvent) TableName() string { return "audit_events" }

// AuditChange is one member's value before and after a write (JSON).
type AuditChange struct {
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// Actor is who makes the writes of a context: a request's caller and its
// request id.
type Actor struct {
	Subject   string
	RequestID string
}

type actorKey struct{}

// WithActor is ctx with its writes made by a.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorOf is the actor of ctx's writes; "system" when none was given.
func ActorOf(ctx context.Context) Actor {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok && a.Subject != "" {
		return a
	}
	return Actor{Subject: "system"}
}

// AuditEntry is what an administrative write changes: the resource's
// members before and after it (nil: it did not exist, or no longer
// does), with AuditEvent's Tenant, Action and Target.
type AuditEntry struct {
	Tenant, Action, Target string
	Before, After          map[string]any
}

// audit records, in tx, that the actor of ctx made the write e says.
func audit(ctx context.Context, tx *gorm.DB, e AuditEntry) error {
	changes, err := diff(e.Before, e.After)
	if err != nil {
		return err
	}
	if len(changes) == 0 && e.Before != nil && e.After != nil {
		return nil // an update that changed nothing
	}
	actor := ActorOf(ctx)
	return tx.Create(&AuditEvent{ID: uuid.Must(uuid.NewV7()).String(), At: microsNow(), Tenant: e.Tenant, Actor: actor.Subject,
		Action: e.Action, Target: e.Target, Changes: changes, RequestID: actor.RequestID}).Error
}

// RecordAuditEvent records an administrative action that writes nothing
// else to the store (a retry or a webhook resend, which Temporal runs),
// once it was done.
func (s *AuditStore) RecordAuditEvent(ctx context.Context, e AuditEntry) error {
	return s.write(ctx, func(tx *gorm.DB) error { return audit(ctx, tx, e) })
}

// diff is the members whose JSON differs between before and after.
func diff(before, after map[string]any) (map[string]AuditChange, error) {
	changes := map[string]AuditChange{}
	encode := func(m map[string]any, key string) (json.RawMessage, error) {
		v, ok := m[key]
		if !ok {
			return json.RawMessage("null"), nil
		}
		return json.Marshal(v)
	}
	for _, m := range []map[string]any{before, after} {
		for key := range m {
			if _, done := changes[key]; done {
				continue
			}
			b, err := encode(before, key)
			if err != nil {
				return nil, err
			}
			a, err := encode(after, key)
			if err != nil {
				return nil, err
			}
			if !bytes.Equal(b, a) {
				changes[key] = AuditChange{Before: b, After: a}
			}
		}
	}
	return changes, nil
}

// AuditQuery selects audit events, newest first.
type AuditQuery struct {
	// Tenant, when set, is the only tenant whose events are read; a
	// super-admin may leave it out for every tenant's and the gateway's.
	Tenant *string
	Action string
	Actor  string
	Target string
	// From and To bound At (To excluded); zero: unbounded.
	From, To time.Time
	// Before, when set, reads the events older than this event id (the
	// cursor of the page before).
	Before string
	Limit  int
}

// AuditEvents reads the events q selects, newest first.
func (s *AuditStore) AuditEvents(ctx context.Context, q AuditQuery) ([]AuditEvent, error) {
	db := s.db.WithContext(ctx)
	if q.Tenant != nil {
		db = db.Where("tenant = ?", *q.Tenant)
	}
	for column, value := range map[string]string{"action": q.Action, "actor": q.Actor, "target": q.Target} {
		if value != "" {
			db = db.Where(column+" = ?", value)
		}
	}
	if !q.From.IsZero() {
		db = db.Where("at >= ?", q.From.UTC())
	}
	if !q.To.IsZero() {
		db = db.Where("at < ?", q.To.UTC())
	}
	if q.Before != "" {
		db = db.Where("id < ?", q.Before)
	}
	var events []AuditEvent
	err := db.Order("id DESC").Limit(q.Limit).Find(&events).Error
	return events, err
}

// members is v's JSON object as a map, without the members drop names.
func members(v any, drop ...string) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, key := range drop {
		delete(m, key)
	}
	return m, nil
}

// DeleteExpiredAuditEvents deletes the audit events older than their
// tenant's job retention at now (docs/api.md, Audit log): a tenant's own
// jobs_seconds, else d.Jobs, which also keeps the gateway's own events;
// 0 keeps them forever. It returns how many it deleted.
func (s *AuditStore) DeleteExpiredAuditEvents(ctx context.Context, d RetentionDefaults, now time.Time) (int64, error) {
	var rows []tenantRow
	if err := s.db.WithContext(ctx).Where("retention_jobs_seconds IS NOT NULL").Find(&rows).Error; err != nil {
		return 0, err
	}
	now = now.UTC()
	var deleted int64
	own := make([]string, 0, len(rows))
	for _, r := range rows {
		own = append(own, r.ID)
		if *r.RetentionJobsSeconds <= 0 {
			continue
		}
		cutoff := now.Add(-time.Duration(*r.RetentionJobsSeconds) * time.Second)
		if err := s.writeStatement(ctx, func(tx *gorm.DB) error {
			res := tx.Where("tenant = ? AND at < ?", r.ID, cutoff).Delete(&AuditEvent{})
			deleted += res.RowsAffected
			return res.Error
		}); err != nil {
			return deleted, err
		}
	}
	if d.Jobs <= 0 {
		return deleted, nil
	}
	err := s.writeStatement(ctx, func(tx *gorm.DB) error {
		q := tx.Where("at < ?", now.Add(-d.Jobs))
		if len(own) > 0 {
			q = q.Where("tenant NOT IN ?", own)
		}
		res := q.Delete(&AuditEvent{})
		deleted += res.RowsAffected
		return res.Error
	})
	return deleted, err
}
