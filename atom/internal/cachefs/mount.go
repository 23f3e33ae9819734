package cachefs

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/winfsp/cgofuse/fuse"

	"github.com/atom-sched/atom/pkg/cache"
)

// Options tune a mount; the zero value is fine.
type Options struct {
	// ReadAhead is how many chunks a sequential reader has fetched ahead
	// of it at most; default 8 (8 MiB with the default chunk size).
	ReadAhead int64
	// Timeout bounds each filesystem operation: past it, with Redis not
	// answering, the operation fails with EIO. Default cache.DefaultTimeout.
	Timeout time.Duration
	// FuseOptions are extra libfuse options, each passed as -o OPT.
	FuseOptions []string
	Log         *slog.Logger // default: discard
}

// Mounted is a mounted cache filesystem.
type Mounted struct {
	dir  string
	host *fuse.FileSystemHost
	done chan struct{}
	err  error // why Mount returned; read after done
}

// Mount serves c's file tree at dir (an existing directory) until
// Unmount, a SIGTERM or SIGINT to this process (cgofuse unmounts then),
// or an external fusermount -u. It returns once the kernel has mounted
// it. It needs /dev/fuse and libfuse 2 (libfuse.so.2, loaded only now).
func Mount(c *cache.Client, dir string, o Options) (*Mounted, error) {
	if o.ReadAhead <= 0 {
		o.ReadAhead = 8
	}
	if o.Timeout <= 0 {
		o.Timeout = cache.DefaultTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return nil, fmt.Errorf("mount the cache: /dev/fuse is missing: the container needs the device (and CAP_SYS_ADMIN), e.g. --device /dev/fuse")
	}
	// Present is not enough: a container's device cgroup may deny it (a
	// hostPath /dev/fuse in a Pod), which libfuse reports only as EPERM.
	if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		return nil, fmt.Errorf("mount the cache: cannot open /dev/fuse (%v): the container has the device file but may not use it: "+
			"on Kubernetes, run a FUSE device plugin that advertises atom.io/fuse on the node (coordinator/README.md, \"Each task a Pod\"); "+
			"with Docker, --device /dev/fuse", errors.Unwrap(err))
	} else {
		f.Close()
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("mount the cache at %s: %w", dir, err)
		}
	}
	f := &fsys{c: c, timeout: o.Timeout, ahead: o.ReadAhead, uid: uint32(os.Getuid()), gid: uint32(os.Getgid()),
		log: o.Log, ready: make(chan struct{}), handles: map[uint64]*handle{}}
	m := &Mounted{dir: dir, host: fuse.NewFileSystemHost(f), done: make(chan struct{})}
	m.host.SetUseIno(true)
	opts := []string{"fsname=atom-cache:" + c.Addr(), "subtype=atom-cache", "default_permissions",
		"hard_remove", "big_writes", "max_read=131072", "use_ino", "nonempty"}
	if os.Getuid() == 0 {
		opts = append(opts, "allow_other") // jobs may run as another user
	}
	opts = append(opts, o.FuseOptions...)
	var args []string
	for _, s := range opts {
		args = append(args, "-o", s)
	}
	go func() {
		defer close(m.done)
		defer func() {
			if r := recover(); r != nil { // cgofuse: cannot find FUSE
				m.err = fmt.Errorf("mount the cache: %v: install libfuse 2 (Debian: apt-get install -y libfuse2 fuse3)", r)
			}
		}()
		if !m.host.Mount(dir, args) {
			m.err = errors.New("mount the cache: libfuse refused (its message is above)")
		}
	}()
	select {
	case <-f.ready:
		return m, nil
	case <-m.done:
		if m.err == nil {
			m.err = errors.New("mount the cache: libfuse stopped before mounting")
		}
		return nil, fmt.Errorf("%w; at %s", m.err, dir)
	}
}

// Dir is where it is mounted.
func (m *Mounted) Dir() string { return m.dir }

// Done is closed once the filesystem is unmounted.
func (m *Mounted) Done() <-chan struct{} { return m.done }

// Unmount unmounts (lazily: open files do not keep it busy) and waits, at
// most timeout, for the server to stop.
func (m *Mounted) Unmount(timeout time.Duration) error {
	select {
	case <-m.done:
		return nil
	default:
	}
	m.host.Unmount()
	select {
	case <-m.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("unmount the cache at %s: still serving after %s", m.dir, timeout)
	}
}
