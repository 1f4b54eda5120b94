package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/internal/payloadcodec"
	"github.com/ai-job-gateway/gateway/store"
)

func TestPayloadKeyChecksRecordThenCompare(t *testing.T) {
	eachStoreDB(t, func(ctx context.Context, t *testing.T, s *store.Store, db *sql.DB) {
		key := payloadcodec.GenerateKey()
		keys, err := payloadcodec.NewKeyring("k1", map[string][]byte{"k1": key})
		require.NoError(t, err)
		require.NoError(t, keys.VerifyKeys(ctx, s.Keys), "a key id never seen is recorded")
		require.NoError(t, keys.VerifyKeys(ctx, s.Keys), "and matches itself")

		var stored []byte
		require.NoError(t, db.QueryRowContext(ctx, "SELECT check_value FROM payload_key_checks WHERE key_id = 'k1'").Scan(&stored))
		want, err := keys.KeyCheck("k1")
		require.NoError(t, err)
		require.Equal(t, want, stored, "the check value is recorded")
		require.False(t, bytes.Contains(stored, key[:8]), "never the key")

		other, err := payloadcodec.NewKeyring("k1", map[string][]byte{"k1": payloadcodec.GenerateKey()})
		require.NoError(t, err)
		err = other.VerifyKeys(ctx, s.Keys)
		require.ErrorIs(t, err, payloadcodec.ErrKeyMismatch, "another key under k1")
		require.Contains(t, err.Error(), `"k1"`)

		rotated, err := payloadcodec.NewKeyring("k2", map[string][]byte{"k1": key, "k2": payloadcodec.GenerateKey()})
		require.NoError(t, err)
		require.NoError(t, rotated.VerifyKeys(ctx, s.Keys), "a new key id rotates in")
	})
}

func TestPayloadKeyChecksRacingRecordersAgree(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		const racers = 8
		got := make([][]byte, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				recorded, err := s.Keys.RecordKeyCheck(ctx, "k1", []byte{byte(i)})
				require.NoError(t, err)
				got[i] = recorded
			})
		}
		wg.Wait()
		for i := range racers {
			require.Equal(t, got[0], got[i], "every racer reads the one value recorded")
		}
	})
}

// TestPayloadKeyChecksReadOnly: RecordedKeyCheck reads a recorded value,
// nil for an id never recorded, and records nothing.
func TestPayloadKeyChecksReadOnly(t *testing.T) {
	eachStore(t, func(ctx context.Context, t *testing.T, s *store.Store) {
		got, err := s.Keys.RecordedKeyCheck(ctx, "k1")
		require.NoError(t, err)
		require.Nil(t, got)
		got, err = s.Keys.RecordedKeyCheck(ctx, "k1")
		require.NoError(t, err)
		require.Nil(t, got, "reading recorded nothing")
		_, err = s.Keys.RecordKeyCheck(ctx, "k1", []byte("check"))
		require.NoError(t, err)
		got, err = s.Keys.RecordedKeyCheck(ctx, "k1")
		require.NoError(t, err)
		require.Equal(t, []byte("check"), got)
	})
}

// TestPayloadKeyChecksNotMigrated: a database an older version migrated,
// without payload_key_checks, is ErrNotMigrated, not a raw missing
// relation.
func TestPayloadKeyChecksNotMigrated(t *testing.T) {
	eachStoreDB(t, func(ctx context.Context, t *testing.T, s *store.Store, db *sql.DB) {
		_, err := db.ExecContext(ctx, "DROP TABLE payload_key_checks")
		require.NoError(t, err)
		_, err = s.Keys.RecordKeyCheck(ctx, "k1", []byte("check"))
		require.ErrorIs(t, err, store.ErrNotMigrated)
		require.ErrorContains(t, err, "no payload_key_checks table")
		_, err = s.Keys.RecordedKeyCheck(ctx, "k1")
		require.ErrorIs(t, err, store.ErrNotMigrated)
	})
}
