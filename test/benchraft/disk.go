package main

import (
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
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

// boltAppends appends n log entries of 1 KiB (about a JobSubmit's) to a
// new raft-boltdb store in dir, as a server's log is kept, and returns how
// long each StoreLog took: one bolt transaction, fsynced (its pages, then
// its meta page). A commit is the leader's append and then, once it is
// written, a follower's.
func boltAppends(dir string, n int) ([]time.Duration, error) {
	d, err := os.MkdirTemp(dir, "bolt-probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(d)
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(d, "raft.db")})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	data := make([]byte, 1024)
	lat := make([]time.Duration, 0, n)
	for i := range n {
		t := time.Now()
		if err := store.StoreLog(&raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: data}); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t))
	}
	return lat, nil
}
