package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// TaskDirs returns the IDs of the tasks that have a directory under
// Dir/tasks, those of earlier runs of the coordinator included.
func (b *Backend) TaskDirs() ([]string, error) {
	entries, err := os.ReadDir(b.tasksDir)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && validTaskID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// Forget removes the directory of a task that no longer runs, its output
// included, once the coordinator has forgotten the task (its job expired).
// A running task's directory is refused; so is one that holds a mount
// point (a cache mount its atom left behind), whose files would be
// removed through it.
func (b *Backend) Forget(taskID string) error {
	if err := validTaskID(taskID); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock() // a Start of the same ID waits
	if t := b.tasks[taskID]; t != nil && t.running {
		return fmt.Errorf("task %s still runs: its directory stays", taskID)
	}
	dir := filepath.Join(b.tasksDir, taskID)
	root, err := deviceOf(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if dev, err := deviceOf(p); err != nil || dev != root {
			return fmt.Errorf("%s is a mount point (or cannot be read: %v): the task's directory stays", p, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// deviceOf returns the device of path's file system.
func deviceOf(path string) (uint64, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("%s: no device number", path)
	}
	return uint64(st.Dev), nil //nolint:unconvert // int32 on some systems
}
