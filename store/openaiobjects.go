package store

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The kinds of OpenAIObject.
const (
	OpenAIFile  = "file"
	OpenAIBatch = "batch"
)

// OpenAIObject is a tenant's file or batch of OpenAI's Files and Batch
// APIs: the file's metadata (its content is in the file store) or the
// batch's OpenAI attributes (the batch is a gateway batch)
// (docs/openai.md, Files and batches).
type OpenAIObject struct {
	Tenant string `gorm:"primaryKey"`
	// Kind is OpenAIFile or OpenAIBatch.
	Kind string `gorm:"primaryKey"`
	ID   string `gorm:"primaryKey"`
	// CreatedAt orders the listings; zero is now.
	CreatedAt time.Time
	// Document is the object's JSON.
	Document string
}

// TableName is the table OpenAI objects live in.
func (OpenAIObject) TableName() string { return "openai_objects" }

// PutOpenAIObject records o, replacing the object of its tenant, kind
// and id if there is one.
func (s *BatchStore) PutOpenAIObject(ctx context.Context, o OpenAIObject) error {
	if o.CreatedAt.IsZero() {
		o.CreatedAt = microsNow()
	}
	o.CreatedAt = o.CreatedAt.UTC().Truncate(time.Microsecond)
	return s.writeStatement(ctx, func(tx *gorm.DB) error {
		return tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "tenant"}, {Name: "kind"}, {Name: "id"}},
			DoUpdates: clause.AssignmentColumns([]string{"created_at", "document"}),
		}).Create(&o).Error
	})
}

// GetOpenAIObject reads tenant's object of kind and id; ErrNotFound when
// there is none.
func (s *BatchStore) GetOpenAIObject(ctx context.Context, tenant, kind, id string) (*OpenAIObject, error) {
	return take[OpenAIObject](s.db.WithContext(ctx).Where("tenant = ? AND kind = ? AND id = ?", tenant, kind, id))
}

// DeleteOpenAIObject deletes tenant's object of kind and id; none is no
// error.
func (s *BatchStore) DeleteOpenAIObject(ctx context.Context, tenant, kind, id string) error {
	return s.writeStatement(ctx, func(tx *gorm.DB) error {
		return tx.Where("tenant = ? AND kind = ? AND id = ?", tenant, kind, id).Delete(&OpenAIObject{}).Error
	})
}

// ListOpenAIObjects lists up to limit of tenant's objects of kind, newest
// first; after, an object's id, lists those created before it (none when
// it names no object).
func (s *BatchStore) ListOpenAIObjects(ctx context.Context, tenant, kind, after string, limit int) ([]OpenAIObject, error) {
	return s.listOpenAIObjects(ctx, tenant, kind, after, limit, "<", "DESC")
}

// ListOpenAIObjectsOldestFirst is ListOpenAIObjects oldest first: after
// lists those created after it.
func (s *BatchStore) ListOpenAIObjectsOldestFirst(ctx context.Context, tenant, kind, after string, limit int) ([]OpenAIObject, error) {
	return s.listOpenAIObjects(ctx, tenant, kind, after, limit, ">", "ASC")
}

func (s *BatchStore) listOpenAIObjects(ctx context.Context, tenant, kind, after string, limit int, cmp, dir string) ([]OpenAIObject, error) {
	q := s.db.WithContext(ctx).Where("tenant = ? AND kind = ?", tenant, kind)
	if after != "" {
		q = q.Where("(created_at, id) "+cmp+" (SELECT created_at, id FROM openai_objects WHERE tenant = ? AND kind = ? AND id = ?)",
			tenant, kind, after)
	}
	var out []OpenAIObject
	err := q.Order("created_at " + dir + ", id " + dir).Limit(limit).Find(&out).Error
	return out, err
}
