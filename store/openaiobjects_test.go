package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/store"
)

// ids are the objects' ids, in order.
func openAIObjectIDs(objs []store.OpenAIObject) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.ID
	}
	return out
}

func TestOpenAIObjectsPutGetDeleteAndList(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		base := time.Now().UTC().Add(-time.Hour)
		for i := range 5 {
			require.NoError(t, s.Batches.PutOpenAIObject(ctx, store.OpenAIObject{Tenant: "acme", Kind: store.OpenAIFile,
				ID: fmt.Sprintf("file-%d", i), CreatedAt: base.Add(time.Duration(i) * time.Second), Document: fmt.Sprintf(`{"n":%d}`, i)}))
		}
		// Another tenant's and another kind's are not listed; two made in
		// the same instant are ordered by id.
		require.NoError(t, s.Batches.PutOpenAIObject(ctx, store.OpenAIObject{Tenant: "globex", Kind: store.OpenAIFile, ID: "file-9", Document: `{}`}))
		require.NoError(t, s.Batches.PutOpenAIObject(ctx, store.OpenAIObject{Tenant: "acme", Kind: store.OpenAIBatch, ID: "file-8", Document: `{}`}))
		require.NoError(t, s.Batches.PutOpenAIObject(ctx, store.OpenAIObject{Tenant: "acme", Kind: store.OpenAIFile, ID: "file-3b",
			CreatedAt: base.Add(3 * time.Second), Document: `{}`}))

		got, err := s.Batches.GetOpenAIObject(ctx, "acme", store.OpenAIFile, "file-2")
		require.NoError(t, err)
		require.Equal(t, `{"n":2}`, got.Document)
		require.WithinDuration(t, base.Add(2*time.Second), got.CreatedAt, time.Millisecond)
		_, err = s.Batches.GetOpenAIObject(ctx, "globex", store.OpenAIFile, "file-2")
		require.ErrorIs(t, err, store.ErrNotFound, "another tenant's")
		_, err = s.Batches.GetOpenAIObject(ctx, "acme", store.OpenAIBatch, "file-2")
		require.ErrorIs(t, err, store.ErrNotFound, "another kind's")

		page, err := s.Batches.ListOpenAIObjects(ctx, "acme", store.OpenAIFile, "", 3)
		require.NoError(t, err)
		require.Equal(t, []string{"file-4", "file-3b", "file-3"}, openAIObjectIDs(page), "newest first, then by id")
		page, err = s.Batches.ListOpenAIObjects(ctx, "acme", store.OpenAIFile, "file-3", 3)
		require.NoError(t, err)
		require.Equal(t, []string{"file-2", "file-1", "file-0"}, openAIObjectIDs(page), "after the cursor")
		page, err = s.Batches.ListOpenAIObjects(ctx, "acme", store.OpenAIFile, "file-0", 3)
		require.NoError(t, err)
		require.Empty(t, page)
		page, err = s.Batches.ListOpenAIObjects(ctx, "acme", store.OpenAIFile, "file-missing", 3)
		require.NoError(t, err)
		require.Empty(t, page, "a cursor naming no object lists none")
		page, err = s.Batches.ListOpenAIObjectsOldestFirst(ctx, "acme", store.OpenAIFile, "file-3", 2)
		require.NoError(t, err)
		require.Equal(t, []string{"file-3b", "file-4"}, openAIObjectIDs(page), "oldest first, after the cursor")

		// Put again, it is replaced.
		require.NoError(t, s.Batches.PutOpenAIObject(ctx, store.OpenAIObject{Tenant: "acme", Kind: store.OpenAIFile, ID: "file-2",
			CreatedAt: base.Add(2 * time.Second), Document: `{"n":"two"}`}))
		got, err = s.Batches.GetOpenAIObject(ctx, "acme", store.OpenAIFile, "file-2")
		require.NoError(t, err)
		require.Equal(t, `{"n":"two"}`, got.Document)

		require.NoError(t, s.Batches.DeleteOpenAIObject(ctx, "acme", store.OpenAIFile, "file-2"))
		require.NoError(t, s.Batches.DeleteOpenAIObject(ctx, "acme", store.OpenAIFile, "file-2"), "none is no error")
		_, err = s.Batches.GetOpenAIObject(ctx, "acme", store.OpenAIFile, "file-2")
		require.ErrorIs(t, err, store.ErrNotFound)
		page, err = s.Batches.ListOpenAIObjects(ctx, "acme", store.OpenAIFile, "", 10)
		require.NoError(t, err)
		require.Equal(t, []string{"file-4", "file-3b", "file-3", "file-1", "file-0"}, openAIObjectIDs(page))
		page, err = s.Batches.ListOpenAIObjects(ctx, "globex", store.OpenAIFile, "", 10)
		require.NoError(t, err)
		require.Equal(t, []string{"file-9"}, openAIObjectIDs(page))
	})
}
