package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/atom/internal/cachefs"
	"github.com/atom-sched/atom/pkg/cache"
	"github.com/atom-sched/atom/pkg/cliusage"
	"github.com/atom-sched/atom/pkg/structs"
)

// barMin is the smallest transfer that shows a progress bar.
const barMin = 16 << 20

func cacheCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "redis", EnvVars: []string{envCacheRedis}, Usage: "host:port of the cache Redis (default $REDIS_HOST:$REDIS_PORT, else 127.0.0.1:6379)"},
		&cli.DurationFlag{Name: "timeout", Value: cache.DefaultTimeout, EnvVars: []string{envCacheTimeout}, Usage: "how long one operation waits for an unreachable Redis"},
	}
	quiet := &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress bar"}
	return &cli.Command{
		Name:  "cache",
		Usage: "load, inspect and mount the Redis dataset cache",
		Subcommands: []*cli.Command{
			{Name: "put", Usage: "load a local file or directory (a dataset, marked complete)", ArgsUsage: "LOCAL DATASET|PATH",
				Flags: append(flags, quiet), Action: cachePut},
			{Name: "get", Usage: "copy a dataset, directory or file to local disk", ArgsUsage: "DATASET|PATH LOCAL",
				Flags: append(flags, quiet), Action: cacheGet},
			{Name: "ls", Usage: "list a directory (datasets show whether they are complete)", ArgsUsage: "[PATH]", Flags: flags, Action: cacheLs},
			{Name: "rm", Usage: "remove a file, or with -r a directory tree; --all empties the whole cache", ArgsUsage: "[-r] DATASET|PATH | --all",
				Flags: append(flags, &cli.BoolFlag{Name: "recursive", Aliases: []string{"r"}},
					&cli.BoolFlag{Name: "all", Usage: "remove everything in the cache"}), Action: cacheRm},
			{Name: "du", Usage: "count the files and bytes under a path", ArgsUsage: "[PATH]", Flags: flags, Action: cacheDu},
			{Name: "mount", Usage: "serve the cache at DIR with FUSE until SIGTERM or Ctrl-C", ArgsUsage: "DIR",
				Flags: append(flags,
					&cli.Int64Flag{Name: "read-ahead", Value: 8, Usage: "chunks fetched ahead of a sequential reader"},
					&cli.IntFlag{Name: "ready-fd", Hidden: true, Usage: "write ready or error to this fd; unmount when stdin closes (atom run)"}),
				Action: cacheMount},
		},
	}
}

// cacheClient connects to the cache Redis of c's flags, for the cache
// commands: its errors are "atom cache: " and dialCache's, with its exit
// status.
func cacheClient(c *cli.Context) (*cache.Client, error) {
	cl, code, err := dialCache(c)
	if err != nil {
		return nil, cli.Exit("atom cache: "+err.Error(), code)
	}
	return cl, nil
}

// dialCache connects to the cache Redis at --redis (or ATOM_CACHE_REDIS),
// else at REDIS_HOST:REDIS_PORT (6379 without REDIS_PORT), else at
// 127.0.0.1:6379, and checks its layout. An address that is not
// host:port and a --timeout of 0 or less are refused, naming where they
// came from, with exitUsage; a Redis that does not answer within
// --timeout fails with 1, naming where its address came from.
func dialCache(c *cli.Context) (*cache.Client, int, error) {
	addr, from := c.String("redis"), cliusage.Source(c, "redis")
	switch {
	case addr != "":
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, exitUsage, fmt.Errorf("%s: use the cache Redis's host:port, such as 127.0.0.1:6379", cliusage.Given(c, "redis"))
		}
	case os.Getenv("REDIS_HOST") != "":
		port := os.Getenv("REDIS_PORT")
		from = "REDIS_HOST and REDIS_PORT"
		if port == "" {
			port, from = "6379", "REDIS_HOST, port 6379"
		}
		addr = net.JoinHostPort(os.Getenv("REDIS_HOST"), port) // host:port, whatever they hold
	default:
		addr, from = "127.0.0.1:6379", "the default: none of --redis, ATOM_CACHE_REDIS and REDIS_HOST is set"
	}
	if c.Duration("timeout") <= 0 {
		return nil, exitUsage, fmt.Errorf("%s: use more than 0 (a duration such as 10s)", cliusage.Given(c, "timeout"))
	}
	cl, err := cache.New(cache.Options{Addr: addr, Timeout: c.Duration("timeout")})
	if err != nil {
		return nil, exitUsage, err
	}
	if err := cl.Init(c.Context); err != nil {
		cl.Close()
		if errors.Is(err, cache.ErrUnavailable) {
			err = fmt.Errorf("%w (address from %s)", err, from)
		}
		return nil, 1, err
	}
	return cl, 0, nil
}

// args returns the command's n arguments (n == 1: optional, "/" when
// absent), checking the one at index name as a dataset name.
func args(c *cli.Context, n int, usage string, name int) ([]string, error) {
	a := c.Args().Slice()
	if len(a) > n || (n == 2 && len(a) != 2) {
		return nil, cli.Exit("atom cache "+c.Command.Name+": use atom cache "+c.Command.Name+" "+usage, exitUsage)
	}
	a = append(a, "/")
	if err := checkName(c, a[name], n == 1); err != nil {
		return nil, err
	}
	return a, nil
}

// checkName refuses what a job's cache.datasets refuses (so what is
// stored is exactly what was asked for, and a job can name it); root
// allows "/", the whole cache, for the commands that only read.
func checkName(c *cli.Context, p string, root bool) error {
	if structs.ValidDataset(p) || (root && p == "/") {
		return nil
	}
	also := ""
	if root {
		also = ", or / for the whole cache"
	}
	return cli.Exit(fmt.Sprintf("atom cache %s: %q is not a dataset name: %s (as in a job's cache.datasets, e.g. lidar/2024-05)%s",
		c.Command.Name, p, structs.DatasetRule, also), exitUsage)
}

// bar is a byte progress bar on stderr for transfers of barMin or more.
func bar(c *cli.Context, total int64, what string) (func(int64), func()) {
	if c.Bool("quiet") || total < barMin {
		return nil, func() {}
	}
	b := progressbar.NewOptions64(total, progressbar.OptionSetWriter(c.App.ErrWriter), progressbar.OptionShowBytes(true),
		progressbar.OptionSetDescription(what), progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionShowCount(), progressbar.OptionOnCompletion(func() { fmt.Fprintln(c.App.ErrWriter) }))
	return func(n int64) { _ = b.Add64(n) }, func() { _ = b.Finish() }
}

func cachePut(c *cli.Context) error {
	a, err := args(c, 2, "LOCAL DATASET|PATH", 1)
	if err != nil {
		return err
	}
	var total int64
	err = filepath.WalkDir(a[0], func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, e := d.Info(); e == nil {
				total += fi.Size()
			}
		}
		return err
	})
	if err != nil {
		return cli.Exit("atom cache put: "+err.Error(), 1)
	}
	cl, err := cacheClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	start := time.Now()
	progress, done := bar(c, total, "put "+a[1])
	info, err := cl.Put(c.Context, a[0], a[1], progress)
	done()
	if err != nil {
		return cli.Exit("atom cache put: "+err.Error(), 1)
	}
	fmt.Fprintf(c.App.Writer, "put %s -> %s: %s in %s\n", a[0], a[1], sizes(info.Files, total), time.Since(start).Round(time.Millisecond))
	if info.Files > 0 || info.Bytes > 0 {
		fmt.Fprintf(c.App.Writer, "dataset %s is complete in redis %s\n", a[1], cl.Addr())
	}
	return nil
}

func cacheGet(c *cli.Context) error {
	a, err := args(c, 2, "DATASET|PATH LOCAL", 0)
	if err != nil {
		return err
	}
	cl, err := cacheClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	u, err := cl.Du(c.Context, a[0])
	if err != nil {
		return cli.Exit("atom cache get: "+err.Error(), 1)
	}
	start := time.Now()
	progress, done := bar(c, u.Bytes, "get "+a[0])
	err = cl.Get(c.Context, a[0], a[1], progress)
	done()
	if err != nil {
		return cli.Exit("atom cache get: "+err.Error(), 1)
	}
	fmt.Fprintf(c.App.Writer, "get %s -> %s: %s in %s\n", a[0], a[1], sizes(u.Files, u.Bytes), time.Since(start).Round(time.Millisecond))
	return nil
}

func cacheLs(c *cli.Context) error {
	a, err := args(c, 1, "[DATASET|PATH]", 0)
	if err != nil {
		return err
	}
	cl, err := cacheClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	st, err := cl.Stat(c.Context, a[0])
	if err != nil {
		return cli.Exit("atom cache ls: "+err.Error(), 1)
	}
	ents := []cache.Entry{{Name: a[0], Attr: st}}
	if st.Dir {
		if ents, err = cl.ReadDirIno(c.Context, st.Ino); err != nil {
			return cli.Exit("atom cache ls: "+err.Error(), 1)
		}
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	for _, e := range ents {
		mode, name, note := "-"+e.Mode.String()[1:], e.Name, ""
		if e.Dir {
			mode, name = "d"+e.Mode.String()[1:], name+"/"
		}
		if d := e.Complete; d != nil {
			note = "complete: " + sizes(d.Files, d.Bytes)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", mode, e.Size, e.Mtime.Format("2006-01-02 15:04"), name, note)
	}
	return tw.Flush()
}

func cacheRm(c *cli.Context) error {
	usage := cli.Exit("atom cache rm: use atom cache rm [-r] DATASET|PATH, or atom cache rm --all to empty the whole cache", exitUsage)
	if c.Bool("all") {
		if c.NArg() != 0 {
			return usage
		}
		return cacheRmAll(c)
	}
	if c.NArg() != 1 {
		return usage
	}
	a := c.Args().Slice()
	if err := checkName(c, a[0], false); err != nil {
		return err
	}
	cl, err := cacheClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	st, err := cl.Stat(c.Context, a[0])
	switch {
	case err != nil:
	case !st.Dir:
		err = cl.Remove(c.Context, a[0])
	case c.Bool("recursive"):
		err = cl.RemoveAll(c.Context, a[0])
	default:
		if err = cl.Rmdir(c.Context, a[0]); errors.Is(err, syscall.ENOTEMPTY) {
			err = fmt.Errorf("%w: use rm -r to remove what is under it", err)
		}
	}
	if err != nil {
		return cli.Exit("atom cache rm: "+err.Error(), 1)
	}
	return nil
}

func cacheRmAll(c *cli.Context) error {
	cl, err := cacheClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.RemoveAll(c.Context, "/"); err != nil {
		return cli.Exit("atom cache rm --all: "+err.Error(), 1)
	}
	fmt.Fprintf(c.App.Writer, "removed everything in the cache in redis %s\n", cl.Addr())
	return nil
}

func cacheDu(c *cli.Context) error {
	a, err := args(c, 1, "[DATASET|PATH]", 0)
	if err != nil {
		return err
	}
	cl, err := cacheClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	u, err := cl.Du(c.Context, a[0])
	if err != nil {
		return cli.Exit("atom cache du: "+err.Error(), 1)
	}
	_, ok, err := cl.Complete(c.Context, a[0])
	if err != nil {
		return cli.Exit("atom cache du: "+err.Error(), 1)
	}
	fmt.Fprintf(c.App.Writer, "%s\t%d files\t%d dirs\t%d bytes\tcomplete=%t\n", a[0], u.Files, u.Dirs, u.Bytes, ok)
	return nil
}

func sizes(files, bytes int64) string {
	return fmt.Sprintf("%d files, %.1f MiB", files, float64(bytes)/(1<<20))
}

// cacheMount serves the cache until SIGTERM or SIGINT (cgofuse unmounts
// then) or, when atom run started it (--ready-fd), until stdin closes.
func cacheMount(c *cli.Context) error {
	var ready io.WriteCloser = nopCloser{io.Discard}
	if fd := c.Int("ready-fd"); fd > 0 {
		ready = os.NewFile(uintptr(fd), "ready")
	}
	defer ready.Close()
	failf := func(err error) error {
		fmt.Fprintf(ready, "error: %v\n", err)
		return cli.Exit("atom cache mount: "+err.Error(), exitCache)
	}
	if c.NArg() != 1 {
		return failf(errors.New("use atom cache mount [--redis HOST:PORT] DIR"))
	}
	signal.Ignore(syscall.SIGHUP)
	// Every chunk read is a fresh 1 MiB from go-redis while little stays
	// live: collect less often (measured: fewer GC cycles and madvise
	// calls under make bench-fuse).
	debug.SetGCPercent(400)
	cl, _, err := dialCache(c)
	if err != nil {
		return failf(err)
	}
	defer cl.Close()
	log := slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := cachefs.Mount(cl, c.Args().First(), cachefs.Options{ReadAhead: c.Int64("read-ahead"), Timeout: c.Duration("timeout"), Log: log})
	if err != nil {
		return failf(err)
	}
	fmt.Fprintln(ready, "ready")
	if c.Int("ready-fd") > 0 {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin) // EOF: atom is done (or gone)
			_ = m.Unmount(time.Minute)
		}()
	}
	<-m.Done()
	return nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
