package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/atom-sched/atom/pkg/cache"
	"github.com/atom-sched/atom/pkg/client"
)

// The dataset cache, from the environment the backend sets:
//
//	ATOM_CACHE_REDIS    host:port of the cluster's cache Redis; set for jobs
//	                    with a cache: section (from the cluster's redis)
//	ATOM_CACHE_MOUNT    where to mount it; default the job's
//	                    cache.mountPath (ATOM_JOB_SPEC), /mnt/cache
//	ATOM_CACHE_TIMEOUT  how long a filesystem call waits for an
//	                    unreachable Redis before failing with EIO (10s)
//	ATOM_CACHE_RETRY    how long atom tries again, with backoff, to reach
//	                    the Redis before the job's command starts (2m)
//
// The job gets REDIS_HOST and REDIS_PORT (unless its env sets them) and,
// when mounted, ATOM_CACHE_DIR.
const (
	envCacheRedis   = "ATOM_CACHE_REDIS"
	envCacheMount   = "ATOM_CACHE_MOUNT"
	envCacheTimeout = "ATOM_CACHE_TIMEOUT"
	envCacheRetry   = "ATOM_CACHE_RETRY"
	exitCache       = 5 // the cache could not be mounted; the command was not started
)

// jobCache is the part of ATOM_JOB_SPEC that says what the job caches.
type jobCache struct {
	CacheMountPath string   `json:"cacheMountPath"`
	Datasets       []string `json:"datasets"`
}

// mountCache mounts the dataset cache when the job asks for it, before
// its command starts, and adds the job's cache variables to env. The
// filesystem is served by a child, `atom cache mount`, in its own process
// group: signals meant for the job do not unmount it under the job, and
// it unmounts itself if atom dies (its stdin closes). unmount, called
// once the job has ended, unmounts and waits for the child.
func mountCache(a allocation, env map[string]string, log *slog.Logger) (unmount func(), err error) {
	var spec jobCache
	if len(a.JobJSON) > 0 {
		_ = json.Unmarshal(a.JobJSON, &spec) // checked by readAllocation
	}
	addr, dir := os.Getenv(envCacheRedis), os.Getenv(envCacheMount)
	if dir == "" {
		dir = spec.CacheMountPath
	}
	if addr == "" {
		if dir != "" {
			return nil, fmt.Errorf("the job asks for the dataset cache at %s, but %s is unset: this cluster has no cache Redis (set the cluster's redis address)", dir, envCacheRedis)
		}
		return func() {}, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: use host:port", envCacheRedis, addr)
	}
	for k, v := range map[string]string{"REDIS_HOST": host, "REDIS_PORT": port} {
		if os.Getenv(k) == "" {
			env[k] = v
		}
	}
	if dir == "" {
		return func() {}, nil
	}
	if err := waitForRedis(addr, os.Stderr); err != nil {
		return nil, err
	}
	m, err := startMount(addr, dir)
	if err != nil {
		return nil, err
	}
	env["ATOM_CACHE_DIR"] = dir
	warnIncomplete(addr, spec.Datasets, log)
	return m, nil
}

// startMount runs `atom cache mount` and waits until it has mounted.
func startMount(addr, dir string) (func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("mount the cache: find atom's binary: %w", err)
	}
	stdin, keep, err := os.Pipe() // atom holds keep: closing it unmounts
	if err != nil {
		return nil, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "cache", "mount", "--redis", addr, "--ready-fd", "3", dir)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, os.Stderr, os.Stderr
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	stdin.Close()
	readyW.Close()
	if err != nil {
		keep.Close()
		readyR.Close()
		return nil, fmt.Errorf("mount the cache: %w", err)
	}
	go func() { _ = cmd.Wait() }() // the reaper may take it first: fine
	lines := bufio.NewScanner(readyR)
	first := make(chan string, 1)
	go func() {
		lines.Scan()
		first <- lines.Text()
		for lines.Scan() { // drain until the child exits
		}
		close(first)
	}()
	fail := func(msg string) (func(), error) {
		keep.Close()
		return nil, fmt.Errorf("mount the cache from %s at %s: %s", addr, dir, msg)
	}
	select {
	case line := <-first:
		if line != "ready" {
			if line == "" {
				line = "the mount helper exited (see its message above)"
			}
			return fail(strings.TrimPrefix(line, "error: "))
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		return fail("not mounted after a minute")
	}
	return func() {
		keep.Close()
		select {
		case <-first: // closed when the child exits: unmounted
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
		// If the child was killed (atom kills what the job left behind,
		// which includes it), its mount is dead: detach it all the same.
		_ = syscall.Unmount(dir, syscall.MNT_DETACH)
	}, nil
}

// warnIncomplete says which of the job's datasets the cache does not
// hold completely: the job may still run (reading what is there, or
// loading it), so this is a warning in the job's output.
func warnIncomplete(addr string, datasets []string, log *slog.Logger) {
	if len(datasets) == 0 {
		return
	}
	c, err := cache.New(cache.Options{Addr: addr, Timeout: 5 * time.Second})
	if err != nil {
		return
	}
	defer c.Close()
	for _, d := range datasets {
		if _, ok, err := c.Complete(context.Background(), d); err != nil {
			log.Warn("cache: cannot check dataset", "dataset", d, "err", err)
		} else if !ok {
			fmt.Fprintf(os.Stderr, "atom: cache: dataset %s is not complete in redis %s (load it with atom cache put)\n", d, addr)
		}
	}
}

// defaultCacheRetry is how long atom tries to reach the cache's Redis
// (one restarting, say) before it gives up on the job ($ATOM_CACHE_RETRY).
const defaultCacheRetry = 2 * time.Minute

// waitForRedis checks the cache's Redis (and its layout) before the mount,
// trying again with backoff while it is unreachable, for up to
// $ATOM_CACHE_RETRY; each retry is a line on w, the task's log. It then
// fails naming the Redis, the last error and how long it tried.
func waitForRedis(addr string, w io.Writer) error {
	bound := defaultCacheRetry
	if v := os.Getenv(envCacheRetry); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("%s=%q: use a duration such as 2m", envCacheRetry, v)
		}
		bound = d
	}
	c, err := cache.New(cache.Options{Addr: addr, Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	start := time.Now()
	for n := 1; ; n++ {
		err := c.Init(context.Background())
		if err == nil || !errors.Is(err, cache.ErrUnavailable) {
			return err
		}
		wait := client.DefaultBackoff(n)
		if time.Since(start)+wait > bound {
			return fmt.Errorf("the cache's redis %s is unreachable after trying for %s (%s): %w",
				addr, time.Since(start).Round(time.Second), envCacheRetry, err)
		}
		fmt.Fprintf(w, "atom: cache: %v; trying again in %s (retry %d, for up to %s)\n", err, wait.Round(100*time.Millisecond), n, bound)
		time.Sleep(wait)
	}
}
