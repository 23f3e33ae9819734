package local

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ownerFile, in a backend's directory of TMPDIR links, holds the process
// ID of the coordinator that made it. Close removes the directory; one
// whose coordinator was killed first (kill -9) is removed by the next
// backend made in the same place (sweepRunDirs). The name has a dot,
// which the links' names (base 36 numbers) never have.
const ownerFile = ".pid"

// runDirPrefix begins the name of every backend's directory of links.
const runDirPrefix = "atom-"

// makeRunDir makes a backend's directory of TMPDIR links in base, with
// its owner file, after removing those whose owners are gone.
func makeRunDir(base string) (string, error) {
	sweepRunDirs(base)
	dir, err := os.MkdirTemp(base, runDirPrefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// sweepRunDirs removes the directories of links in base whose owner
// process no longer exists. They hold links only (RemoveAll does not
// follow them): nothing a task wrote goes. A directory without an owner
// file, or one this user may not remove, is left alone.
func sweepRunDirs(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), runDirPrefix) {
			continue
		}
		dir := filepath.Join(base, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || alive(pid) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// alive reports whether process pid exists (signal 0: EPERM means it
// exists as another user's).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
