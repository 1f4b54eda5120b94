package blobstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// backdate makes the object key look last modified at the given time; each
// backend has its own way.
type backdate func(t *testing.T, key string, at time.Time)

// runContract checks the behaviour every backend shares.
func runContract(t *testing.T, s *Store, makeOld backdate) {
	ctx := context.Background()

	t.Run("put then open and download", func(t *testing.T) {
		n, err := s.Put(ctx, "results/job-1/transcript.srt", "application/x-subrip", strings.NewReader("1\n00:00:00,000 --> 00:00:01,000\nhello\n"))
		require.NoError(t, err)
		require.EqualValues(t, 38, n)

		r, err := s.Open(ctx, "results/job-1/transcript.srt")
		require.NoError(t, err)
		body, err := io.ReadAll(r)
		require.NoError(t, err)
		require.NoError(t, r.Close())
		require.Equal(t, "1\n00:00:00,000 --> 00:00:01,000\nhello\n", string(body))

		target := filepath.Join(t.TempDir(), "transcript.srt")
		n, err = s.Download(ctx, "results/job-1/transcript.srt", target)
		require.NoError(t, err)
		require.EqualValues(t, 38, n)
		onDisk, err := os.ReadFile(target)
		require.NoError(t, err)
		require.Equal(t, body, onDisk)

		_, err = s.Download(ctx, "results/job-1/transcript.srt", target)
		require.ErrorIs(t, err, os.ErrExist, "Download makes a new file, never overwrites")
	})

	t.Run("put replaces an object", func(t *testing.T) {
		_, err := s.Put(ctx, "results/job-2/out.txt", "text/plain", strings.NewReader("first"))
		require.NoError(t, err)
		_, err = s.Put(ctx, "results/job-2/out.txt", "text/plain", strings.NewReader("second"))
		require.NoError(t, err)
		require.Equal(t, "second", readObject(t, s, "results/job-2/out.txt"))
	})

	t.Run("a failed put leaves no object", func(t *testing.T) {
		broken := io.MultiReader(strings.NewReader("partial"), errReader{errors.New("disk gone")})
		_, err := s.Put(ctx, "results/job-3/broken.txt", "text/plain", broken)
		require.ErrorContains(t, err, "disk gone")
		_, err = s.Open(ctx, "results/job-3/broken.txt")
		require.ErrorIs(t, err, ErrNotFound)
		require.Empty(t, listKeys(t, s, "results/job-3/"), "no temporary file or part is left")
	})

	t.Run("missing objects", func(t *testing.T) {
		_, err := s.Open(ctx, "results/nobody/none.txt")
		require.ErrorIs(t, err, ErrNotFound)
		target := filepath.Join(t.TempDir(), "none.txt")
		_, err = s.Download(ctx, "results/nobody/none.txt", target)
		require.ErrorIs(t, err, ErrNotFound)
		require.NoFileExists(t, target)
		require.NoError(t, s.Delete(ctx, "results/nobody/none.txt"))
	})

	t.Run("delete", func(t *testing.T) {
		putText(t, s, "results/job-4/a.txt", "a")
		require.NoError(t, s.Delete(ctx, "results/job-4/a.txt"))
		_, err := s.Open(ctx, "results/job-4/a.txt")
		require.ErrorIs(t, err, ErrNotFound)
	})

	t.Run("delete prefix", func(t *testing.T) {
		putText(t, s, "results/job-5/a.txt", "a")
		putText(t, s, "results/job-5/nested/b.txt", "b")
		putText(t, s, "results/job-50/c.txt", "c")
		deleted, err := s.DeletePrefix(ctx, "results/job-5/")
		require.NoError(t, err)
		require.Equal(t, 2, deleted)
		require.Equal(t, []string{"results/job-50/c.txt"}, listKeys(t, s, "results/job-5"))

		deleted, err = s.DeletePrefix(ctx, "results/job-5/")
		require.NoError(t, err)
		require.Zero(t, deleted)
		_, err = s.DeletePrefix(ctx, "")
		require.ErrorIs(t, err, ErrInvalidKey)
	})

	t.Run("sweep", func(t *testing.T) {
		putText(t, s, "media/job-6/old.wav", "old")
		putText(t, s, "media/job-6/new.wav", "new")
		putText(t, s, "keep/old.txt", "kept: outside the prefix")
		makeOld(t, "media/job-6/old.wav", time.Now().Add(-48*time.Hour))
		makeOld(t, "keep/old.txt", time.Now().Add(-48*time.Hour))

		swept, err := s.Sweep(ctx, "media/", time.Now().Add(-24*time.Hour))
		require.NoError(t, err)
		require.Equal(t, 1, swept)
		require.Equal(t, []string{"media/job-6/new.wav"}, listKeys(t, s, "media/"))
		require.Equal(t, "kept: outside the prefix", readObject(t, s, "keep/old.txt"))

		swept, err = s.Sweep(ctx, "", time.Now().Add(-24*time.Hour))
		require.NoError(t, err)
		require.Equal(t, 1, swept, "an empty prefix sweeps the whole store")
		_, err = s.Open(ctx, "keep/old.txt")
		require.ErrorIs(t, err, ErrNotFound)
	})

	t.Run("key rules", func(t *testing.T) {
		for _, key := range []string{"", "/results/a.txt", "results/../secret", "..", "results/a\xff"} {
			_, err := s.Put(ctx, key, "text/plain", strings.NewReader("x"))
			require.ErrorIs(t, err, ErrInvalidKey, "Put %q", key)
			_, err = s.Open(ctx, key)
			require.ErrorIs(t, err, ErrInvalidKey, "Open %q", key)
			_, err = s.SignedURL(ctx, key, time.Minute)
			require.ErrorIs(t, err, ErrInvalidKey, "SignedURL %q", key)
			require.ErrorIs(t, s.Delete(ctx, key), ErrInvalidKey, "Delete %q", key)
		}
		_, err := s.Sweep(ctx, "../", time.Now())
		require.ErrorIs(t, err, ErrInvalidKey)
		_, err = s.SignedURL(ctx, "results/job-1/transcript.srt", 0)
		require.ErrorContains(t, err, "expiry must be positive")
	})
}

func putText(t *testing.T, s *Store, key, text string) {
	t.Helper()
	_, err := s.Put(context.Background(), key, "text/plain", strings.NewReader(text))
	require.NoError(t, err)
}

func readObject(t *testing.T, s *Store, key string) string {
	t.Helper()
	r, err := s.Open(context.Background(), key)
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	body, err := io.ReadAll(r)
	require.NoError(t, err)
	return string(body)
}

// listKeys lists through the bucket, so it sees what the store really holds.
func listKeys(t *testing.T, s *Store, prefix string) []string {
	t.Helper()
	var keys []string
	it := s.bucket.List(nil)
	for {
		o, err := it.Next(context.Background())
		if err == io.EOF {
			return keys
		}
		require.NoError(t, err)
		if strings.HasPrefix(o.Key, prefix) {
			keys = append(keys, o.Key)
		}
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// generated is an io.Reader of size bytes made on the fly (not a byte
// slice), a repeating pattern so a wrong offset shows.
type generated struct{ size, offset int64 }

func (g *generated) Read(p []byte) (int, error) {
	if g.offset >= g.size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), g.size-g.offset)
	for i := range n {
		p[i] = byte((g.offset + i) % 251)
	}
	g.offset += n
	return int(n), nil
}

// requireGenerated checks that r holds exactly what generated{size} makes.
func requireGenerated(t *testing.T, r io.Reader, size int64) {
	t.Helper()
	want := &generated{size: size}
	got := make([]byte, 1<<20)
	wantBuf := make([]byte, 1<<20)
	var total int64
	for {
		n, err := io.ReadFull(r, got)
		if n > 0 {
			_, _ = io.ReadFull(want, wantBuf[:n])
			require.True(t, bytes.Equal(wantBuf[:n], got[:n]), "bytes differ near offset %d", total)
			total += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		require.NoError(t, err)
	}
	require.Equal(t, size, total)
}
