package main

import (
	"os"
	"syscall"
	"time"
)

// fsyncLatencies appends n 4 KiB blocks to a new file in dir, each followed
// by an fdatasync, and returns how long each write and sync took: what one
// durable append costs on that filesystem, the floor under a Raft commit
// (bolt fsyncs each log append, on the leader and a follower).
func fsyncLatencies(dir string, n int) ([]time.Duration, error) {
	f, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, 4096)
	for i := range block {
		block[i] = byte(i)
	}
	lat := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		if _, err := f.Write(block); err != nil {
			return nil, err
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t))
	}
	return lat, nil
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
