package cachefs_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/pkg/cache/cachetest"
)

// within runs read in the background and returns its error, failing the
// test if none came within limit: an outage must end in EIO within the
// bound, not in twice it (the kernel retries a failed read-ahead with a
// read of its own, which must not wait a whole bound again).
func within(t *testing.T, limit time.Duration, read func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- read() }()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		t.Errorf("no error within %s of the outage", limit)
		return <-done // bounded too, if later
	}
}

// Redis stops answering mid-read: the read fails with EIO within the
// bound (1.5x allowed for scheduling), and the mount works again once
// Redis is back (paused and resumed; stopped and restarted on the same
// port). Both a jump past the read-ahead and a reader going on
// sequentially in 1 MiB pieces, as a training job does, are covered.
func TestRedisOutageGivesEIOThenRecovers(t *testing.T) {
	const bound = 2 * time.Second
	const size = 64 << 20
	srv := cachetest.StartRedis(t)
	dir, c := mount(t, srv, bound)
	_, err := c.WriteFrom(context.Background(), "/frames.bin", random(3, size), 0o644, nil)
	require.NoError(t, err)
	want, err := io.ReadAll(random(3, size))
	require.NoError(t, err)
	type outage struct {
		name       string
		stop, back func()
	}
	outages := []outage{{"paused", srv.Pause, srv.Resume}, {"stopped", srv.Stop, srv.Restart}}
	for _, how := range []string{"jump", "sequential"} {
		for i, o := range outages {
			t.Run(how+"/"+o.name, func(t *testing.T) {
				f, err := os.Open(filepath.Join(dir, "frames.bin"))
				require.NoError(t, err)
				defer f.Close()
				buf := make([]byte, 1<<20)
				_, err = io.ReadFull(f, buf) // mid-read: the first MiB is in
				require.NoError(t, err)
				o.stop()
				err = within(t, bound*3/2, func() error {
					if how == "jump" {
						_, err := f.ReadAt(buf, int64(32+i*8)<<20) // past the read-ahead
						return err
					}
					for {
						if _, err := io.ReadFull(f, buf); err != nil {
							return err
						}
					}
				})
				assert.ErrorIs(t, err, syscall.EIO)
				o.back()
				require.Eventually(t, func() bool {
					_, err := f.ReadAt(buf, 48<<20)
					return err == nil
				}, 30*time.Second, 50*time.Millisecond, "the mount recovers")
				assert.Equal(t, want[48<<20:49<<20], buf)
				b, err := os.ReadFile(filepath.Join(dir, "frames.bin"))
				require.NoError(t, err)
				assert.True(t, equal(want, b))
				_, err = os.Stat(filepath.Join(dir, "nope"))
				assert.ErrorIs(t, err, os.ErrNotExist)
			})
		}
	}
}
