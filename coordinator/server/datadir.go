package server

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// lockWait is how long opening raft.db waits for another process's lock
// on it before saying the data dir is in use: bolt alone waits for ever.
const lockWait = time.Second

// DataDirInUseError is a data dir whose raft.db another process (another
// coordinator) holds open.
type DataDirInUseError struct {
	Dir string
	// PID is the holder's process ID; 0 when it cannot be told.
	PID int
}

func (e *DataDirInUseError) Error() string {
	who := "another coordinator"
	if e.PID > 0 {
		who = fmt.Sprintf("another coordinator (pid %d)", e.PID)
	}
	return fmt.Sprintf("data dir %s is in use by %s: stop it or give another --data-dir", e.Dir, who)
}

// openStore opens DataDir/raft.db, failing with a *DataDirInUseError when
// another process holds it.
func openStore(dir string) (*raftboltdb.BoltStore, error) {
	path := filepath.Join(dir, "raft.db")
	store, err := raftboltdb.New(raftboltdb.Options{Path: path, BoltOptions: &bbolt.Options{Timeout: lockWait}})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, &DataDirInUseError{Dir: dir, PID: lockHolder(path)}
	}
	return store, err
}
