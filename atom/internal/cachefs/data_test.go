package cachefs_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/cache/cachetest"
)

// random is a reproducible stream of n bytes.
func random(seed uint64, n int64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}), n)
}

// bigData is n bytes of one random MiB repeated, each copy stamped with
// its index, so misplaced chunks show: cheap to make under -race.
func bigData(n int) []byte {
	block, err := io.ReadAll(random(9, 1<<20))
	if err != nil {
		panic(err)
	}
	b := make([]byte, n)
	for i := 0; i < n; i += len(block) {
		copy(b[i:], block)
		copy(b[i:], fmt.Sprintf("block %d", i))
	}
	return b
}

func sum(t *testing.T, r io.Reader) [32]byte {
	t.Helper()
	h := sha256.New()
	_, err := io.Copy(h, r)
	require.NoError(t, err)
	return [32]byte(h.Sum(nil))
}

// A 256 MiB file round-trips byte for byte both ways, and random reads
// through the mount match.
func TestBigFileRoundTrip(t *testing.T) {
	const size = 256 << 20
	ctx := context.Background()
	dir, c := mount(t, cachetest.StartRedis(t), 0)
	data := bigData(size)
	want := sha256.Sum256(data)

	// Written through the mount, read with the client.
	f, err := os.Create(filepath.Join(dir, "big.bin"))
	require.NoError(t, err)
	_, err = io.CopyBuffer(f, bytes.NewReader(data), make([]byte, 1<<20))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	a, err := c.Stat(ctx, "/big.bin")
	require.NoError(t, err)
	require.Equal(t, int64(size), a.Size)
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(c.ReadTo(ctx, a, pw, nil)) }()
	assert.Equal(t, want, sum(t, pr), "written through the mount, read with the client")

	// Written with the client, read through the mount.
	_, err = c.WriteFrom(ctx, "/big2.bin", bytes.NewReader(data), 0o644, nil)
	require.NoError(t, err)
	f, err = os.Open(filepath.Join(dir, "big2.bin"))
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, want, sum(t, f), "written with the client, read through the mount")

	// Random reads (fresh handle: no read-ahead state).
	g, err := os.Open(filepath.Join(dir, "big.bin"))
	require.NoError(t, err)
	defer g.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		off, n := rng.Int64N(size), 1+rng.IntN(300<<10)
		got := make([]byte, n)
		k, err := g.ReadAt(got, off)
		if err != io.EOF {
			require.NoError(t, err)
		}
		require.Equal(t, min(int64(n), size-off), int64(k))
		require.True(t, equal(data[off:off+int64(k)], got[:k]), "ReadAt(%d, %d)", off, n)
	}
}

// Many small files: written through the mount and fetched with the
// client, loaded with the client and read through the mount.
func TestManySmallFiles(t *testing.T) {
	const n = 1500
	ctx := context.Background()
	dir, c := mount(t, cachetest.StartRedis(t), 0)
	content := func(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("file %d;", i)), i%300) }
	name := func(i int) string { return fmt.Sprintf("d%02d/f%04d.bin", i%20, i) }
	for i := range n {
		p := filepath.Join(dir, "small", name(i))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, content(i), 0o644))
	}
	out := t.TempDir()
	require.NoError(t, c.Get(ctx, "/small", out, nil))
	for i := range n {
		b, err := os.ReadFile(filepath.Join(out, name(i)))
		require.NoError(t, err)
		require.Equal(t, sha256.Sum256(content(i)), sha256.Sum256(b), name(i))
	}
	info, err := c.Put(ctx, out, "small-copy", nil)
	require.NoError(t, err)
	assert.Equal(t, int64(n), info.Files)
	count := 0
	require.NoError(t, filepath.WalkDir(filepath.Join(dir, "small-copy"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		var i int
		_, err = fmt.Sscanf(filepath.Base(p), "f%04d.bin", &i)
		require.NoError(t, err)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Equal(t, sha256.Sum256(content(i)), sha256.Sum256(b), p)
		count++
		return nil
	}))
	assert.Equal(t, n, count)
}

func TestConcurrentReaders(t *testing.T) {
	const size = 40<<20 + 777
	ctx := context.Background()
	dir, c := mount(t, cachetest.StartRedis(t), 0)
	_, err := c.WriteFrom(ctx, "/shared.bin", random(7, size), 0o644, nil)
	require.NoError(t, err)
	want := sum(t, random(7, size))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := os.Open(filepath.Join(dir, "shared.bin"))
			if !assert.NoError(t, err) {
				return
			}
			defer f.Close()
			h := sha256.New()
			_, err = io.Copy(h, f)
			assert.NoError(t, err)
			assert.Equal(t, want, [32]byte(h.Sum(nil)))
		}()
	}
	wg.Wait()
}
