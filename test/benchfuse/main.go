// Command benchfuse measures the dataset cache's FUSE mount against plain
// go-redis: a 256 MiB file is loaded into a fresh redis-server, then read
// sequentially through `atom cache mount` (a separate process, as in a
// job) and with one GET per chunk, alternately, several rounds. It prints
// key=value lines; the last is fuse_read_ratio, the median over rounds of
// mount throughput / client throughput (target >= 0.5).
//
//	go build -o bin/atom ./atom && go run ./test/benchfuse --atom bin/atom
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/atom-sched/atom/pkg/cache"
)

func main() {
	atom := flag.String("atom", "bin/atom", "the atom binary (serves the mount)")
	size := flag.Int64("size", 256<<20, "file size in bytes")
	rounds := flag.Int("rounds", 7, "rounds of each reader, alternating")
	readAhead := flag.Int("read-ahead", 8, "the mount's read-ahead, in chunks")
	flag.Parse()
	if err := run(*atom, *size, *rounds, *readAhead); err != nil {
		fmt.Fprintln(os.Stderr, "benchfuse:", err)
		os.Exit(1)
	}
}

func run(atom string, size int64, rounds, readAhead int) error {
	ctx := context.Background()
	work, err := os.MkdirTemp("", "benchfuse-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	addr, stop, err := startRedis(work)
	if err != nil {
		return err
	}
	defer stop()
	c, err := cache.New(cache.Options{Addr: addr})
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Init(ctx); err != nil {
		return err
	}
	src := io.LimitReader(rand.NewChaCha8([32]byte{1}), size)
	if _, err := c.WriteFrom(ctx, "/bench.bin", src, 0o644, nil); err != nil {
		return err
	}
	a, err := c.Stat(ctx, "/bench.bin")
	if err != nil {
		return err
	}

	dir := filepath.Join(work, "mnt")
	mount := exec.Command(atom, "cache", "mount", "--redis", addr, "--read-ahead", strconv.Itoa(readAhead), dir)
	mount.Stdout, mount.Stderr = os.Stderr, os.Stderr
	if err := mount.Start(); err != nil {
		return fmt.Errorf("start %s cache mount: %w", atom, err)
	}
	defer func() { _ = mount.Process.Signal(os.Interrupt); _ = mount.Wait() }()
	if err := waitFor(func() bool { _, err := os.Stat(filepath.Join(dir, "bench.bin")); return err == nil }); err != nil {
		return fmt.Errorf("the mount at %s did not come up", dir)
	}

	fmt.Printf("file_bytes=%d\nchunk_bytes=%d\nrounds=%d\nread_ahead_chunks=%d\n", size, a.Chunk, rounds, readAhead)
	var viaClient, viaFuse, ratios []float64
	buf := make([]byte, 1<<20)
	for r := range rounds {
		t := time.Now()
		n, err := readClient(ctx, c.Redis(), c, a)
		if err != nil || n != size {
			return fmt.Errorf("client read %d of %d bytes: %v", n, size, err)
		}
		viaClient = append(viaClient, mibs(n, time.Since(t)))
		t = time.Now()
		n, err = readFile(filepath.Join(dir, "bench.bin"), buf)
		if err != nil || n != size {
			return fmt.Errorf("mount read %d of %d bytes: %v", n, size, err)
		}
		viaFuse = append(viaFuse, mibs(n, time.Since(t)))
		ratios = append(ratios, viaFuse[r]/viaClient[r])
		fmt.Printf("round_%d_client_mib_s=%.0f\nround_%d_fuse_mib_s=%.0f\nround_%d_ratio=%.2f\n", r+1, viaClient[r], r+1, viaFuse[r], r+1, ratios[r])
	}
	// The ratio is the median of the rounds' ratios: each round reads both
	// ways back to back, so load from elsewhere mostly cancels out.
	fmt.Printf("client_get_mib_s=%.0f\nfuse_read_mib_s=%.0f\nfuse_read_ratio=%.2f\n", median(viaClient), median(viaFuse), median(ratios))
	return nil
}

// readClient GETs every chunk of a, one after another: what a job using
// the Redis client directly does.
func readClient(ctx context.Context, rdb *redis.Client, c *cache.Client, a cache.Attr) (int64, error) {
	var n int64
	for i := int64(0); i*a.Chunk < a.Size; i++ {
		b, err := rdb.Get(ctx, c.ChunkKey(a.Ino, i)).Bytes()
		if err != nil {
			return n, err
		}
		n += int64(len(b))
	}
	return n, nil
}

// readFile reads p from start to end with buf, as a data loader would.
func readFile(p string, buf []byte) (int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	for {
		k, err := f.Read(buf)
		n += int64(k)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func mibs(n int64, d time.Duration) float64 { return float64(n) / (1 << 20) / d.Seconds() }

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[len(s)/2]
}

func startRedis(dir string) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start redis-server (apt-get install -y redis-server): %w", err)
	}
	addr := "127.0.0.1:" + port
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	if err := waitFor(func() bool { return rdb.Ping(context.Background()).Err() == nil }); err != nil {
		stop()
		return "", nil, fmt.Errorf("redis-server on %s did not answer", addr)
	}
	return addr, stop, nil
}

func waitFor(ok func() bool) error {
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if ok() {
			return nil
		}
	}
	return errors.New("timed out")
}
